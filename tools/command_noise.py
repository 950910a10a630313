"""Where a command task's A/A spread comes from: its performance command run over and
over in two copies of the task, under a few process settings, every case's time kept.

A command task (an AgentKernelArena folder) is timed by its own runner, one process per
round, so what differs between two processes of the same code sets the A/A speedup.
This runs each task's performance command round after round, alternating two copies
(``a`` and ``b``, as ``base/`` and ``cand/``) and the settings below, until a deadline,
and writes every run's per-case milliseconds, so the spread of each setting can be read
offline (``--summary``):

- ``plain``: every process laid out at random (``run_command(..., fixed=False)``);
- ``seed``: ``PYTHONHASHSEED=0`` as well (dict and set layouts alike in every process);
- ``pinned``: the seed, and the process bound to one CPU core (the same for every run);
- ``layout``: as aka runs a command (``fixed``, :func:`aka.kinds._command._fixed_layout`):
  the seed, and address-space randomization off, so every process maps its libraries,
  heap and stacks at the same addresses: a launch of a few microseconds on the host can
  differ by where its hot data falls in the caches and branch predictors, which that
  layout moves.

Usage (on a GPU)::

    python3 tools/command_noise.py ROOT/TASK [ROOT/TASK ...] --seconds 200 --out noise.json
    python3 tools/command_noise.py ROOT/TASK --settings plain,layout --seconds 300
    python3 tools/command_noise.py --summary noise.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from aka.eval import tree_caches
from aka.kinds._command import read_report, run_command

SETTINGS = ("plain", "seed", "pinned", "layout")


@contextlib.contextmanager
def _setting(name: str) -> Iterator[bool]:
    """This process's environment and CPU affinity for one run (children inherit both);
    yields whether the command runs laid out as aka runs it (``run_command``'s ``fixed``:
    one hash seed, address-space randomization off)."""
    if name not in SETTINGS:
        raise ValueError(f"unknown setting {name!r}: one of {', '.join(SETTINGS)}")
    saved_env = os.environ.get("PYTHONHASHSEED")
    saved_cpus = os.sched_getaffinity(0)
    try:
        if name in ("seed", "pinned"):
            os.environ["PYTHONHASHSEED"] = "0"
        if name == "pinned":
            os.sched_setaffinity(0, {max(saved_cpus)})
        yield name == "layout"
    finally:
        os.sched_setaffinity(0, saved_cpus)
        if saved_env is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = saved_env


def _copies(task: Path, work: Path) -> tuple[dict[str, Any], dict[str, Path]]:
    spec = yaml.safe_load((task / "task.yaml").read_text())["commands"]
    arms = {}
    for arm in ("a", "b"):
        arms[arm] = work / task.name / arm
        shutil.copytree(task, arms[arm])
    return spec, arms


def measure(tasks: list[Path], seconds: float, out: Path,
            settings: tuple[str, ...] = SETTINGS) -> None:  # fmt: skip
    deadline = time.monotonic() + seconds
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        laid = {t.name: _copies(t, Path(tmp)) for t in tasks}
        caches = {t.name: {a: tree_caches(p) for a, p in laid[t.name][1].items()} for t in tasks}
        for name, (spec, arms) in laid.items():  # compile once, uncounted
            ok, detail, _ = run_command(spec["compile"], arms["a"], device="cuda", timeout=600,
                                        caches=caches[name]["a"])  # fmt: skip
            print(name, "compile", ok, detail[-300:], flush=True)
        r = 0
        while time.monotonic() < deadline:
            for name, (spec, arms) in laid.items():
                k = r % len(settings)
                order = settings[k:] + settings[:k]
                for setting in order:
                    for arm in ("a", "b") if r % 2 == 0 else ("b", "a"):
                        if time.monotonic() > deadline:
                            break
                        report = arms[arm] / spec.get("report", "build/performance_report.json")
                        report.unlink(missing_ok=True)
                        with _setting(setting) as fixed:
                            ok, detail, wall = run_command(spec["performance"], arms[arm],
                                                           device="cuda", timeout=300,
                                                           caches=caches[name][arm],
                                                           fixed=fixed)  # fmt: skip
                        row: dict[str, Any] = {"task": name, "round": r, "setting": setting,
                                               "arm": arm, "ok": ok, "wall_s": round(wall, 2)}  # fmt: skip
                        try:
                            if not ok:
                                raise ValueError(detail[-500:])
                            row["ms"] = {k: v[0] for k, v in read_report(report).items()}
                        except ValueError as exc:
                            row["ok"], row["error"] = False, str(exc)
                        runs.append(row)
                        out.write_text(json.dumps({"runs": runs}, indent=1))
            r += 1
    print(f"{len(runs)} runs in {r} rounds -> {out}", flush=True)


def _aa(a: list[float], b: list[float]) -> float:
    return statistics.median(a) / statistics.median(b)


def summary(path: Path) -> None:
    """Per task and setting: the median over cases of the per-case spread between
    processes (coefficient of variation), and the A/A speedup of arm ``a`` over ``b`` by
    ratio of medians per case, with its geometric mean over cases."""
    runs = [r for r in json.loads(path.read_text())["runs"] if r["ok"]]
    tasks = sorted({r["task"] for r in runs})
    for task in tasks:
        for setting in SETTINGS:
            rows = [r for r in runs if r["task"] == task and r["setting"] == setting]
            if len(rows) < 4:
                continue
            cases = sorted(set.intersection(*(set(r["ms"]) for r in rows)))
            cvs, aas = [], []
            for case in cases:
                xs = [r["ms"][case] for r in rows]
                cvs.append(statistics.stdev(xs) / statistics.mean(xs))
                a = [r["ms"][case] for r in rows if r["arm"] == "a"]
                b = [r["ms"][case] for r in rows if r["arm"] == "b"]
                if a and b:
                    aas.append(_aa(a, b))
            geo = statistics.geometric_mean(aas) if aas else float("nan")
            # How much of it is the process: each run's time over the cases' medians,
            # its spread between runs, and its correlation with the run before it (drift).
            med = {c: statistics.median(r["ms"][c] for r in rows) for c in cases}
            factor = [statistics.geometric_mean([r["ms"][c] / med[c] for c in cases])
                      for r in rows]  # fmt: skip
            lag = (statistics.correlation(factor[:-1], factor[1:])
                   if len(set(factor)) > 1 else 0.0)  # fmt: skip
            print(f"{task:44s} {setting:7s} runs {len(rows):3d}  spread median "
                  f"{statistics.median(cvs):.3f} (max {max(cvs):.3f})  process "
                  f"{statistics.stdev(factor):.3f} lag-1 {lag:+.2f}  A/A {geo:.3f} "
                  f"[{min(aas):.3f}-{max(aas):.3f}]")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tasks", nargs="*", type=Path)
    p.add_argument("--seconds", type=float, default=200.0)
    p.add_argument("--out", type=Path, default=Path("command_noise.json"))
    p.add_argument("--summary", type=Path, help="print the spread of a written file")
    p.add_argument("--settings", default=",".join(SETTINGS),
                   help=f"comma-separated, of {', '.join(SETTINGS)}")  # fmt: skip
    args = p.parse_args(argv)
    if args.summary:
        summary(args.summary)
    elif args.tasks:
        settings = tuple(x.strip() for x in args.settings.split(",") if x.strip())
        unknown = [x for x in settings if x not in SETTINGS]
        if unknown or not settings:
            sys.exit(f"--settings: unknown {unknown or 'none given'}; use {','.join(SETTINGS)}")
        measure(args.tasks, args.seconds, args.out, settings)
    else:
        sys.exit("give task folders to measure, or --summary FILE")


if __name__ == "__main__":
    main()
