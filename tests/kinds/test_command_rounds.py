"""A command task's performance runs are added while the speedup is too spread to trust.

Every performance run of a command task is a fresh process, so its time moves with the
config Triton's autotuner keeps in that process and the clocks of the moment. Three rounds
per arm are enough when they agree; when they do not, rounds are added (up to seven) and
the interval drops each side's extreme from five rounds on. The performance command here
reads its time from a list, one entry per run, so the spread is chosen by the test.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from aka.kind_specs import CommandSpec
from aka.kinds._command import MAX_ROUNDS, ROUNDS, run_commands

PERF = """import json, pathlib
times = json.loads(pathlib.Path("times.json").read_text())
log = pathlib.Path("runs.log")
n = len(log.read_text().split()) if log.exists() else 0
log.write_text(log.read_text() + "x\\n" if log.exists() else "x\\n")
pathlib.Path("build").mkdir(exist_ok=True)
ms = times[min(n, len(times) - 1)]
json.dump([{"test_case_id": "a", "execution_time_ms": ms, "params": {"N": 8}}],
          open("build/performance_report.json", "w"))
"""


def _timed(tmp: Path, base_ms: list[float], cand_ms: list[float]) -> tuple[dict, int]:
    folders = {"base": (tmp / "base", base_ms), "cand": (tmp / "cand", cand_ms)}
    for folder, times in folders.values():
        folder.mkdir()
        (folder / "perf.py").write_text(PERF)
        (folder / "times.json").write_text(json.dumps(times))
    spec = CommandSpec(compile="true", correctness="true", performance=f"{sys.executable} perf.py")
    out = run_commands(spec, base=tmp / "base", cand=tmp / "cand", device="cpu", time=True)
    assert out["error"] is None, out["error"]
    runs = len((tmp / "base" / "runs.log").read_text().split())
    assert runs == len((tmp / "cand" / "runs.log").read_text().split())
    (item,) = out["timing"]
    return item["pair"], runs


def test_rounds_that_agree_stop_at_three(tmp_path: Path) -> None:
    pair, runs = _timed(tmp_path, [2.0, 2.02, 1.99] * 3, [1.0, 1.01, 0.99] * 3)
    assert runs == ROUNDS
    assert pair["speedup"] == pytest.approx(2.0)
    assert pair["baseline"]["n"] == ROUNDS and "3 interleaved rounds" in pair["method"]


def test_spread_rounds_go_on_and_one_outlier_does_not_set_the_interval(tmp_path: Path) -> None:
    """A 30 % slower process in each arm: the interval is tight again at five rounds,
    once each arm's extreme is dropped."""
    base = [1.0, 1.3, 1.0, 1.01, 0.99, 1.0, 1.0]
    cand = [1.0, 1.0, 0.7, 1.0, 1.02, 0.98, 1.0]
    pair, runs = _timed(tmp_path, base, cand)
    assert runs == 5
    assert pair["speedup"] == pytest.approx(1.0)
    lo, hi = pair["speedup_ci"]
    assert 0.95 < lo <= 1.0 <= hi < 1.05, pair["speedup_ci"]


def test_rounds_stop_at_the_most_even_when_still_spread(tmp_path: Path) -> None:
    pair, runs = _timed(tmp_path, [1.0, 2.0] * 5, [1.0] * 10)
    assert runs == MAX_ROUNDS
    assert pair["baseline"]["n"] == MAX_ROUNDS
    assert pair["speedup_ci"][1] / pair["speedup_ci"][0] > 1.5  # honest about the spread
