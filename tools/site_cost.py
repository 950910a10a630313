"""What a forbidden operator called by the task's own code costs each arm of a timing pair.

The red-team ``scale`` fixture with a model file around its kernel (not editable, the
entry) that calls ``torch.mul`` OPS times after the kernel: timed once with ``torch.mul``
allowed and once forbidden, alternately, RUNS times each. Forbidden, every one of those
calls is attributed by the sealed core (a walk over the Python stack) in the candidate's
calls and, doing the same work and keeping nothing, in the baseline's; the difference of
the medians over OPS is the cost per operator, and the two arms must pay it alike.

    python tools/site_cost.py --runs 2 --ops 200
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "redteam"))

MODEL = """
import importlib.util
import pathlib

import torch

_path = pathlib.Path(__file__).with_name("kernel.py")
_spec = importlib.util.spec_from_file_location("_kernel_" + str(abs(hash(str(_path)))), _path)
_kernel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_kernel)


def scale(x):
    y = _kernel.scale(x)
    for _ in range({ops}):
        y = torch.mul(y, 1.0)
    return y
"""
KERNEL = "def scale(x):\n    return x.add(x).add(1.0)\n"


def once(ops: int, forbidden: list[str]) -> dict[str, Any]:
    """One evaluation of the fixture: the two arms' medians (seconds) and the speedup."""
    from redteam_corpus import scale_job

    from aka.eval._pipeline import run_job

    job, root = scale_job(Path(tempfile.mkdtemp(prefix="aka-site-cost-")), KERNEL)
    for tree in ("base", "cand"):
        (root / tree / "model.py").write_text(MODEL.format(ops=ops))
    timing = {"target_rel_ci": 0.01, "max_time_s": 1.0, "min_samples": 50}
    v = run_job(dataclasses.replace(job, entry_file="model.py", forbidden=forbidden,
                                    timing=timing), root)  # fmt: skip
    if not v.correct or not v.timing:
        raise SystemExit(f"the fixture failed ({forbidden}): {v.error}")
    pair = v.timing[0]["pair"]
    return {"forbidden": forbidden, "baseline_s": pair["baseline"]["median_s"],
            "candidate_s": pair["candidate"]["median_s"], "speedup": pair["speedup"]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = [once(args.ops, f) for _ in range(args.runs) for f in ([], ["torch.mul"])]
    for r in rows:
        print(json.dumps(r))
    for arm in ("baseline_s", "candidate_s"):
        allowed = sorted(r[arm] for r in rows if not r["forbidden"])
        charged = sorted(r[arm] for r in rows if r["forbidden"])
        each = (charged[len(charged) // 2] - allowed[len(allowed) // 2]) / args.ops
        print(f"{arm[:-2]}: {each * 1e6:.2f} us per forbidden operator of task code")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
