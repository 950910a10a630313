"""A/A speedups with the input drawer on and off, on the CPU (aka.eval._drawer).

Each setting evaluates a task's own starting source against itself ``--runs`` times
through :class:`aka.api.Evaluator`, in a process of its own (the switch is read once, from
``AKA_EVAL_DRAWER``, when the evaluator starts), at the fast timing the arena's tests use.
An A/A should come out at 1; what the drawer's round trip does to the timed calls shows
as the distance from it. The evaluator reports a speedup inside its noise band as 1, so
each run's per-shape ratios (baseline median / candidate median, from its feedback) are
kept too. ``--load N`` keeps N busy processes running meanwhile (as a full test run
loads the 2-core CI machine). Usage::

    python tools/drawer_aa.py --tasks-root tests/fixtures/tasks --task torch/ops/affine --runs 4
    python tools/drawer_aa.py --runs 10 --load 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ONE = """
import json, re, sys, yaml
from pathlib import Path
from aka.api import Evaluator
from aka.config import TimingSettings
root, task, runs, ledger = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
spec = yaml.safe_load((Path(root) / task / "task.yaml").read_text())
src = Path(root) / task / spec.get("source_dir", "source")
files = {e: (src / e).read_text() for e in spec["editable"]}
timing = TimingSettings(max_time_s=0.2, min_samples=5)
ev = Evaluator(ledger, tasks_root=root, device="cpu", timing=timing)
for _ in range(runs):
    r = ev.evaluate(task, files)
    shapes = [float(x) for x in re.findall(r": ([0-9.]+)x \\(baseline", r.feedback or "")]
    print(json.dumps({"speedup": r.speedup, "shapes": shapes, "flags": r.hack_flags,
                      "error": r.error}))
ev.close()
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks-root", default="tests/fixtures/tasks")
    ap.add_argument("--task", default="torch/ops/affine")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--load", type=int, default=0, help="busy processes kept running meanwhile")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    results: dict[str, list[dict[str, object]]] = {}
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        _measure(args, results)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    if args.out:
        command = " ".join(["python", "tools/drawer_aa.py", *sys.argv[1:]])
        record = {"command": command, "task": args.task, "load": args.load, "results": results}
        args.out.write_text(json.dumps(record, indent=2))


def _measure(args: argparse.Namespace, results: dict[str, list[dict[str, object]]]) -> None:
    """Each setting's runs, in a process of its own, into ``results``."""
    with tempfile.TemporaryDirectory() as tmp:
        for setting in ("1", "0"):
            env = {**os.environ, "AKA_EVAL_DRAWER": setting}
            out = subprocess.run(
                [sys.executable, "-c", ONE, args.tasks_root, args.task, str(args.runs),
                 str(Path(tmp) / f"ledger{setting}")],
                capture_output=True, text=True, env=env, check=True,
            )  # fmt: skip
            rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
            results["drawer on" if setting == "1" else "drawer off"] = rows
            speedups = ", ".join(
                f"{r['speedup']:.3f} ({'/'.join(f'{x:.3f}' for x in r['shapes'])})"
                for r in rows
                if r["speedup"] is not None
            )
            print(f"{'on ' if setting == '1' else 'off'}: {speedups}")


if __name__ == "__main__":
    main()
