"""Every fenced python, sql and console block in docs/ runs as written.

Blocks run in a sandbox directory that holds what a reader of the docs has after the
quickstart: a ledger ``.aka`` with two finished runs ``r1`` and ``r2`` (arms ``base`` and
``treat`` on the CPU), the bundled ``tasks/`` and a config ``run.yaml``. Each python block
runs in a fresh namespace (nothing defined by an earlier block), so it can be copied
alone. A block that needs what CI has not is marked on its fence, and only then skipped:
```` ```python needs-gpu ````, ``needs-key`` (an agent's API key or login), ``needs-docker``,
``needs-slurm``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
FIXTURE_TASKS = REPO / "tests" / "fixtures" / "tasks"
LANGUAGES = ("python", "sql", "console")
MARKS = frozenset({"needs-gpu", "needs-key", "needs-docker", "needs-slurm"})
FENCE = re.compile(r"^```([a-z]+)([^\n]*)\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block of a docs page."""

    page: str
    line: int
    language: str
    marks: frozenset[str]
    code: str

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def blocks() -> list[Block]:
    """Every python, sql and console block under docs/, in page order."""
    out = []
    for page in sorted((REPO / "docs").glob("*.md")):
        text = page.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) in LANGUAGES:
                line = text[: m.start()].count("\n") + 1
                marks = frozenset(m.group(2).split())
                out.append(Block(page.name, line, m.group(1), marks, m.group(3)))
    return out


BLOCKS = blocks()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aka.cli import main

    root = tmp_path_factory.mktemp("docs")
    shutil.copytree(REPO / "tasks", root / "tasks")
    shutil.copytree(FIXTURE_TASKS / "torch", root / "tasks" / "torch")
    config = {
        "label": "docs",
        "tasks": ["torch/ops/affine"],
        "tasks_root": "tasks",
        "arms": [{"name": "base", "agent": "noop"}, {"name": "treat", "agent": "noop"}],
        "device": "cpu",
        "repeats": 2,
        "timing": {"max_time_s": 0.2, "min_samples": 5},
    }
    (root / "run.yaml").write_text(yaml.safe_dump(config))
    cwd = Path.cwd()
    os.chdir(root)
    try:
        for rid in ("r1", "r2"):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
                main(["run", "run.yaml", "--ledger", ".aka", "--run-id", rid])
    finally:
        os.chdir(cwd)
    assert (root / ".aka").is_dir()
    return root


def test_the_docs_have_blocks_to_run() -> None:
    runnable = [b for b in BLOCKS if not b.marks & MARKS]
    assert len(runnable) >= 10, [b.name for b in BLOCKS]
    unknown = {m for b in BLOCKS for m in b.marks} - MARKS
    assert not unknown, f"unknown fence marks {unknown}; use one of {sorted(MARKS)}"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_block_runs(block: Block, sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if block.marks & MARKS:
        pytest.skip(f"{block.name} is marked {' '.join(sorted(block.marks & MARKS))}")
    monkeypatch.chdir(sandbox)
    if block.language == "python":
        code = compile(block.code, block.name, "exec")
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, {"__name__": "__docs__"})
        return
    commands = (
        [f"aka sql {_quote(block.code.strip())}"]
        if block.language == "sql"
        else [line[2:] for line in block.code.splitlines() if line.startswith("$ ")]
    )
    assert commands, f"{block.name}: a console block shows commands as `$ command`"
    env = {
        **os.environ,
        "AKA_LEDGER": ".aka",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    for command in commands:
        proc = subprocess.run(
            ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, (
            f"{block.name}: `{command}` exited {proc.returncode}\n{proc.stderr[-2000:]}"
        )


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_views_docs_are_generated_from_the_views() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_views_docs.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    from aka.views import VIEWS

    text = (REPO / "docs" / "views.md").read_text()
    assert all(f"## `{name}`" in text for name in VIEWS)


def test_docs_cite_only_pages_in_the_repository() -> None:
    """Links and docs/ paths resolve; notes kept outside the repository are not cited."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", text):
            assert (page.parent / target).is_file(), f"{page.name} links to missing {target}"
        for cited in re.findall(r"\bdocs/([a-z_]+\.md)\b", text):
            assert (REPO / "docs" / cited).is_file(), f"{page.name} cites missing docs/{cited}"
        for outside in ("FIELD.md", "DESIGN.md", "STYLE.md"):
            assert outside not in text, f"{page.name} cites {outside}, not in the repository"


def test_every_view_is_one_call_as_a_dataframe(sandbox: Path) -> None:
    import polars as pl

    import aka
    from aka.views import VIEWS

    frames = aka.read(sandbox / ".aka")
    for name in ["events", *VIEWS]:
        assert isinstance(frames.view(name), pl.DataFrame)
    # blocks run before may have added runs of their own (api.md records a service run)
    mine = pl.col("run_id").is_in(["r1", "r2"])
    assert frames.scores().filter(mine).height == 8
    assert {"r1", "r2"} <= set(frames.runs()["run_id"])
    assert frames.attempts().filter(mine).height == 8
    assert frames.measurements().filter(mine).height == 8
    assert frames.all_scores()["policy_spec"].null_count() == 0
    assert frames.sql("SELECT count(*) AS n FROM runs WHERE label = ?", ["docs"])["n"][0] == 2


def test_sql_schema_lists_every_view_and_its_columns(sandbox: Path, cli) -> None:
    import json

    from aka.views import VIEWS

    res = cli("sql", "--schema", "--ledger", str(sandbox / ".aka"), "--format", "json")
    assert res.code == 0, res.err
    rows = json.loads(res.out)
    assert {r["view"] for r in rows} == {"events", *VIEWS}
    assert {"view": "measurements", "column": "speedup_ci_low", "type": "DOUBLE"} in rows
    bare = cli("sql", "--ledger", str(sandbox / ".aka"))
    assert bare.code == 2 and "--schema" in bare.err
