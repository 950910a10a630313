"""What the reservoir of timed-call audits costs a pair's timing stage.

The sealed core offers every timed candidate call to a reservoir of kept outputs
(``aka.eval._plan.AUDIT_MAX`` of them per shape): a kept call's output is copied to host
memory and digested at once, and its inputs are compared with the values written. About
``AUDIT_MAX * (1 + ln(rounds / AUDIT_MAX))`` calls of a pair are kept that way, all while
the pair holds the device. This evaluates the baselines of the first TASKS bundled Triton
tasks against themselves with the reservoir as the evaluator sets it and with none (only
the last call kept), alternately, RUNS times each, and reports the timing stage's wall
median per setting and the difference per kept call. Nothing else changes between the
two, so the difference is the reservoir's.

    python tools/audit_cost.py --device cuda --tasks 3 --runs 3 --max-time-s 0.1
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _keeps(rounds: int, size: int) -> float:
    """Expected reservoir insertions over ``rounds`` offers into ``size`` slots."""
    if size <= 0 or rounds <= 0:
        return 0.0
    return float(min(rounds, size) + max(0.0, size * math.log(rounds / size)))


def measure(device: str, tasks: int, runs: int, max_time_s: float) -> dict[str, Any]:
    """Per task and setting: timing-stage medians, rounds per shape and cost per kept call."""
    from aka.cli import _bench_eval
    from aka.eval import Switches, Workers, _plan

    size = _plan.AUDIT_MAX
    _bench_eval.TIMING["max_time_s"] = max_time_s
    workers = Workers(Switches.from_env().with_warm(True))
    rows: dict[str, dict[str, Any]] = {}
    try:
        for task in _bench_eval.triton_tasks(tasks):
            _bench_eval.evaluate_baseline(task, device, workers)  # compiled and cached once
            got: dict[int, list[dict[str, Any]]] = {size: [], 0: []}
            for _ in range(runs):
                for setting in (size, 0):
                    _plan.AUDIT_MAX = setting
                    try:
                        got[setting].append(_bench_eval.evaluate_baseline(task, device, workers))
                    finally:
                        _plan.AUDIT_MAX = size
            rows[str(task.relative_to(_bench_eval.TASKS_ROOT))] = _summary(got, size)
    finally:
        workers.shutdown()
    return {"device": device, "runs": runs, "max_time_s": max_time_s, "audit_max": size,
            "tasks": rows}  # fmt: skip


def _summary(got: dict[int, list[dict[str, Any]]], size: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for setting, results in got.items():
        bad = [r["error"] for r in results if not r["correct"]]
        if bad:
            raise SystemExit(f"an evaluation failed with AUDIT_MAX={setting}: {bad[0]}")
        out[f"timing_s_{setting}"] = statistics.median(r["stage_s"]["timing"] for r in results)
        out[f"rounds_{setting}"] = [[s["n"] for s in r["shapes"]] for r in results]
    keeps = statistics.median(sum(_keeps(n, size) for n in rnds) for rnds in out[f"rounds_{size}"])
    extra = out[f"timing_s_{size}"] - out["timing_s_0"]
    out["kept_calls_per_evaluation"] = round(keeps, 1)
    out["reservoir_s"] = round(extra, 4)
    out["per_kept_call_ms"] = round(1e3 * extra / keeps, 3) if keeps else None
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-time-s", type=float, default=0.1)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    result = measure(args.device, args.tasks, args.runs, args.max_time_s)
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
