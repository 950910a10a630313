"""What the sealed core's vault costs a pair's timing stage, against an earlier core.

The vault (``aka/eval/_seal/seal.cpp``) keeps the keys and the samples in a mapping with
no access while candidate code runs; every HMAC and every sample pushed opens it and
closes it again (two ``mprotect`` calls). This times the red-team corpus's honest
``honest_vectorized`` on the CPU fixture ``scale`` for exactly ROUNDS rounds, RUNS times,
with the core of this tree and with the core of git revision BASE (its ``seal.cpp``
built the same way), one after the other, and reports per core the timing stage's wall
median and the time per round outside the timed windows.

    python tools/vault_cost.py --base c1bb59c --runs 5 --rounds 400
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "redteam")]


def _runs(runs: int, rounds: int) -> dict[str, Any]:
    from redteam_corpus import CORPUS, scale_job

    from aka.eval._pipeline import run_job

    timing = {"target_rel_ci": 1e-9, "max_time_s": 60, "min_samples": rounds,
              "max_samples": rounds}  # fmt: skip
    stage, outside = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="aka-vault-") as tmp:
            job, root = scale_job(Path(tmp), (CORPUS / "honest_vectorized.py").read_text())
            v = run_job(dataclasses.replace(job, timing=timing), root)
            pair = v.timing[0]["pair"]
            busy = sum(pair["baseline"]["samples_s"]) + sum(pair["candidate"]["samples_s"])
            stage.append(v.stage_s["timing"])
            outside.append((v.stage_s["timing"] - busy) / rounds)
    return {"timing_stage_s": round(statistics.median(stage), 4),
            "outside_windows_per_round_us": round(statistics.median(outside) * 1e6, 1)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="a git revision whose core to compare with")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=400)
    args = ap.parse_args()

    from aka.eval import _native

    here = _native.SOURCE
    old = subprocess.run(["git", "-C", str(REPO), "show", f"{args.base}:aka/eval/_seal/seal.cpp"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="aka-vault-src-") as tmp:
        base = Path(tmp) / "seal.cpp"
        base.write_text(old)
        out = {}
        for name, source in ((args.base, base), ("this tree", here)):
            _native.SOURCE = source
            _native._built.clear()
            out[name] = _runs(args.runs, args.rounds)
    print(json.dumps({"runs": args.runs, "rounds": args.rounds, **out}, indent=1))


if __name__ == "__main__":
    main()
