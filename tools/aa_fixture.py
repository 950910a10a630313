"""A/A of the red-team ``scale`` fixture: its slow baseline (16 chunks, about 65 torch
operators per call) evaluated as its own candidate, several times.

A many-operator baseline is where a per-operator cost of the evaluator shows (the
sealed core's operator recorder runs in both arms of every timed pair): the medians say
what it adds, the A/A speedups whether the two arms pay alike.

    python tools/aa_fixture.py --device cpu --runs 4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "redteam"))

from redteam_corpus import TASKS, scale_job  # noqa: E402

from aka.eval._pipeline import run_job  # noqa: E402

TIMING = {"target_rel_ci": 0.02, "max_time_s": 1.0, "min_samples": 30}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON")
    args = ap.parse_args()
    source = (TASKS / "torch/ops/scale/source/kernel.py").read_text()
    rows = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="aka-aa-") as tmp:
            job, root = scale_job(Path(tmp), source, device=args.device)
            v = run_job(dataclasses.replace(job, timing=TIMING), root)
        pair = v.timing[0]["pair"] if v.timing else {}
        row = {
            "correct": v.correct, "speedup": pair.get("speedup"), "ci": pair.get("speedup_ci"),
            "baseline_us": pair.get("baseline", {}).get("median_s", 0) * 1e6,
            "candidate_us": pair.get("candidate", {}).get("median_s", 0) * 1e6,
        }  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
