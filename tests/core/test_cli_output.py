"""What a new user reads: progress off a terminal, JSON alone on stdout, clear refusals."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest
from arena_helpers import write_config

FIXTURE_TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
JSON_COMMANDS = [
    ("report", "r1"),
    ("status",),
    ("audit", "KEY", "--run", "r1"),
    ("sql", "SELECT run_id, label, status FROM runs"),
    ("compare", "r1/a", "r2/a"),
    ("ledger", "verify"),
]


@dataclass(frozen=True)
class TwoRuns:
    """Two runs of one config (so the same attempt keys) in one ledger."""

    ledger: Path
    key: str
    run_out: str


def _main(*argv: str) -> str:
    """Run ``aka ARGV`` in-process with stdout not a terminal; return what it printed."""
    from aka.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
        main(list(argv))
    return buf.getvalue()


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> TwoRuns:
    tmp = tmp_path_factory.mktemp("two_runs")
    tasks_root = tmp / "tasks"
    shutil.copytree(FIXTURE_TASKS, tasks_root)
    cfg = write_config(tmp, tasks_root, arms=[{"name": "a", "agent": "noop"}], repeats=2)
    ledger = str(tmp / "ledger")
    out = _main("run", str(cfg), "--ledger", ledger, "--run-id", "r1")
    _main("run", str(cfg), "--ledger", ledger, "--run-id", "r2")
    report = json.loads(_main("report", "r1", "--ledger", ledger, "--format", "json"))
    return TwoRuns(Path(ledger), report[0]["attempt_key"], out)


def test_progress_off_a_terminal_is_a_line_per_event(two_runs: TwoRuns) -> None:
    lines = two_runs.run_out.splitlines()
    assert lines[0].startswith("[1/2] started torch/ops/affine [a] repeat ")
    assert lines[1].startswith("[1/2] finished torch/ops/affine [a] repeat ")
    assert "(correct, speedup " in lines[1]
    assert lines[2].startswith("[2/2] started ") and lines[3].startswith("[2/2] finished ")
    assert "\x1b[" not in two_runs.run_out, "no terminal control codes in a log"


def test_an_attempt_key_in_two_runs_is_an_error_that_lists_them(cli, two_runs: TwoRuns) -> None:
    res = cli("audit", two_runs.key, "--ledger", str(two_runs.ledger))
    assert res.code == 2
    assert "r1" in res.err and "r2" in res.err and "--run" in res.err
    assert cli("audit", two_runs.key, "--run", "r2", "--ledger", str(two_runs.ledger)).code == 0


@pytest.mark.parametrize("args", JSON_COMMANDS, ids=[" ".join(a[:1]) for a in JSON_COMMANDS])
def test_format_json_prints_json_alone(cli, two_runs: TwoRuns, args: tuple[str, ...]) -> None:
    argv = [two_runs.key if a == "KEY" else a for a in args]
    if argv[0] == "compare":
        argv.append("--force")  # the JSON of a forced comparison carries its warnings
    res = cli(*argv, "--ledger", str(two_runs.ledger), "--format", "json")
    assert res.code == 0, res.err
    json.loads(res.out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))


def test_version(cli) -> None:
    from aka import __version__

    res = cli("--version")
    assert res.code == 0 and res.out.strip() == f"aka {__version__}"


@pytest.mark.parametrize("command", ["dashboard", "serve"])
def test_a_busy_port_is_one_line_with_the_fix(
    cli, command: str, ledger_dir: Path, tasks_root: Path
) -> None:
    ledger_dir.mkdir()
    (ledger_dir / "ledger.json").write_text('{"format": 1}')
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        extra = ["--root", str(tasks_root), "--device", "cpu"] if command == "serve" else []
        res = cli(command, "--port", str(port), "--ledger", str(ledger_dir), *extra)
    assert res.code == 2
    assert f"port {port} on 127.0.0.1 is already in use" in res.err
    assert "--port" in res.err and "Traceback" not in res.err


def test_the_two_servers_default_to_different_ports(cli) -> None:
    dash = cli("dashboard", "--help").out
    serve = cli("serve", "--help").out
    assert "8765" in dash and "8766" in serve and "8765" not in serve


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_exported_files_follow_the_umask(
    cli, two_runs: TwoRuns, tmp_path: Path, mask: int, mode: int
) -> None:
    out = tmp_path / f"rewards-{mask:o}.parquet"
    old = os.umask(mask)
    try:
        res = cli("export", "rewards", "r1", "--out", str(out), "--ledger", str(two_runs.ledger))
    finally:
        os.umask(old)
    assert res.code == 0, res.err
    assert stat.S_IMODE(out.stat().st_mode) == mode


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_report_table_fits_an_80_column_terminal_and_wide_shows_all(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from aka.cli._common import OutputFormat, emit_rows
    from aka.cli._report import REPORT_COLUMNS

    row = {
        "task": "triton2triton/llm/fused_moe_silu_and_mul", "arm": "treatment-with-skills",
        "agent": "claude_code", "repeat": 0, "compiled": True, "correct": False,
        "speedup": None, "score": 20.0, "self_evals": 4, "candidate": "b3:0123456789ab",
        "tries": 1, "error": "AssertionError: mismatch on shape {'N': 4099} (max abs 0.5)",
        "arm_digest": "b3:fedcba987654",
    }  # fmt: skip
    monkeypatch.setenv("COLUMNS", "80")
    for wide in (False, True):
        screen = _Terminal()
        monkeypatch.setattr("sys.stdout", screen)
        emit_rows([row, row], OutputFormat.table, title="run r1", columns=REPORT_COLUMNS, wide=wide)
        lines = re.sub(r"\x1b\[[0-9;]*m", "", screen.getvalue()).splitlines()
        assert max(len(line) for line in lines) <= 80, screen.getvalue()
        top = next(line for line in lines if "┏" in line)
        assert top.count("┳") + 1 == (len(row) if wide else len(REPORT_COLUMNS))
        note = capsys.readouterr().err
        assert ("--wide shows them" in note) is not wide


def test_the_bar_names_the_attempt_running_now() -> None:
    from rich.console import Console
    from rich.progress import Progress

    from aka.cli._run import _Bar
    from aka.core import AttemptPlan
    from aka.events import Scored

    def plan(task: str, arm: str) -> AttemptPlan:
        return AttemptPlan(f"{task}#{arm}#0", task, arm, "noop", 0, 0, 1)

    progress = Progress(console=Console(file=io.StringIO(), width=200))
    bar = _Bar(progress)
    bar.started(plan("llm/softmax", "base"), 1, 2)
    [task] = progress.tasks
    assert task.description == "running llm/softmax \\[base] #0" and task.completed == 0
    done = Scored(eval_id="e", try_no=1, purpose="final", compiled=True, correct=True,
                  speedup=1.5, score=270.0, policy="agentkernelarena", policy_version=2,
                  policy_spec="{}", components={})  # fmt: skip
    bar(plan("llm/softmax", "base"), done, 1, 2)
    bar.started(plan("llm/rms_norm", "treat"), 2, 2)
    assert task.description.startswith("running llm/rms_norm \\[treat] #0")
    assert "last: llm/softmax \\[base] score 270.0" in task.description and task.completed == 1
