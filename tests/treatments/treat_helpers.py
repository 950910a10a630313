"""Helpers for treatment tests: recording fake agent CLIs, configs, ledger reads."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aka.events import REGISTRY
from aka_ledger import Ledger

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"
FIXTURE_TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
RECORDER = """#!{python}
import json, os, sys
sys.path.insert(0, {fakes!r})
argv = sys.argv[1:]
if argv[:1] != ["--version"] and os.environ.get("TREAT_RECORD"):
    cwd = os.getcwd()
    files = sorted(
        os.path.relpath(os.path.join(d, f), cwd) for d, _, fs in os.walk(cwd) for f in fs
    )
    mcp = None
    for arg in argv:
        if arg.startswith("--mcp-config="):
            with open(arg.split("=", 1)[1]) as fh:
                mcp = json.load(fh)
    texts = {{}}
    for rel in files:
        if rel.endswith((".md", ".json")):
            with open(os.path.join(cwd, rel)) as fh:
                texts[rel] = fh.read()
    rec = {{"name": {name!r}, "argv": argv, "files": files, "texts": texts, "mcp": mcp,
           "env": dict(os.environ)}}
    with open(os.environ["TREAT_RECORD"], "a") as fh:
        fh.write(json.dumps(rec) + "\\n")
from _fake import main
main({name!r})
"""


def install_recorders(tmp: Path, mp: pytest.MonkeyPatch) -> Path:
    """Put fake ``claude``/``codex``/``cursor-agent`` first on PATH; each call is appended
    to the JSON-lines file returned (argv, workspace files, their texts, MCP file, env)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("claude", "codex", "cursor-agent"):
        path = bin_dir / name
        path.write_text(RECORDER.format(python=sys.executable, fakes=str(FAKES), name=name))
        path.chmod(0o755)
    record = tmp / "calls.jsonl"
    mp.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    mp.setenv("TREAT_RECORD", str(record))
    return record


@pytest.fixture
def recording_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """:func:`install_recorders` for one test."""
    return install_recorders(tmp_path, monkeypatch)


def calls(record: Path) -> list[dict[str, Any]]:
    """Every recorded CLI call, in order."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


def write_run(tmp: Path, tasks_root: Path, arms: list[dict[str, Any]], **extra: Any) -> Path:
    """A CPU run config over the fixture task with fast timing."""
    cfg: dict[str, Any] = {
        "label": "treat",
        "tasks": ["torch/ops/affine"],
        "tasks_root": str(tasks_root),
        "arms": arms,
        "device": "cpu",
        "timing": {"max_time_s": 0.2, "min_samples": 3},
    }
    cfg.update(extra)
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def open_ledger(path: Path) -> Ledger:
    """The test's ledger, read-only use."""
    return Ledger.open(path, registry=REGISTRY, create=False)


def run_count(path: Path) -> int:
    """How many runs the ledger at ``path`` records (0 when there is no ledger)."""
    if not path.exists():
        return 0
    try:
        led = open_ledger(path)
    except Exception:
        return 0
    try:
        return len(led.events(types=["RunStarted"]))
    finally:
        led.close()
