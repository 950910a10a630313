"""How an honest kernel's fresh rounds compare with its pooled ones, run after run.

Where inputs are slow to generate, timed calls draw them from a pool of eight sets and
about one round in four gets a set never seen (``aka.eval._replay``). This evaluates the
red-team corpus's honest ``honest_vectorized`` on the CPU fixture ``scale`` RUNS times with
pooled inputs forced (``fresh_max_s`` 0), one evaluation at a time, and reports per run the
candidate's median on each kind of round, the share of each kind's calls slower than
twice the pooled median, and whether the first timing alone would have been suspected of
a cache (``aka.eval._replay.suspects``). An honest kernel is never flagged: a suspicion is
settled by a second timing.

    python tools/replay_rounds.py --runs 20 [--split-stages]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "redteam")]

POOL = {"target_rel_ci": 0.05, "max_time_s": 0.2, "min_samples": 5, "fresh_max_s": 0.0}


def _rounds(item: dict[str, Any]) -> dict[str, Any]:
    f = item["raw"]
    tags, cand = f["fresh"], list(f["windows"][1])
    fresh = [w for w, t in zip(cand, tags, strict=True) if t]
    pooled = [w for w, t in zip(cand, tags, strict=True) if not t]
    mid = statistics.median(pooled)
    return {
        "fresh_calls": len(fresh), "pooled_calls": len(pooled),
        "fresh_median_us": round(statistics.median(fresh) * 1e6, 2) if fresh else None,
        "pooled_median_us": round(mid * 1e6, 2),
        "fresh_slow_share": round(sum(w > 2 * mid for w in fresh) / max(len(fresh), 1), 3),
        "pooled_slow_share": round(sum(w > 2 * mid for w in pooled) / len(pooled), 3),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--split-stages", action="store_true", help="a process per stage")
    args = ap.parse_args()

    from redteam_corpus import CORPUS, scale_job

    from aka.eval import _replay
    from aka.eval._pipeline import run_job

    real, seen = _replay.suspects, []

    def spy(raw: Any, ratio: float = 1.5) -> list[tuple[int, str]]:
        found = real(raw, ratio)
        seen.append({**_rounds(raw[0]), "suspected": bool(found)} if raw else {})
        return found

    _replay.suspects = spy  # type: ignore[assignment]
    runs, text = [], (CORPUS / "honest_vectorized.py").read_text()
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="aka-replay-") as tmp:
            job, root = scale_job(Path(tmp), text)
            v = run_job(dataclasses.replace(job, timing=POOL), root, split_stages=args.split_stages)
            runs.append({"first_timing": seen[0] if seen else {}, "timed_again": len(seen) > 1,
                         "correct": v.correct, "flags": v.flags})  # fmt: skip
            seen.clear()
    fresh = [r["first_timing"].get("fresh_slow_share", 0.0) for r in runs]
    pooled = [r["first_timing"].get("pooled_slow_share", 0.0) for r in runs]
    summary = {
        "runs": len(runs), "split_stages": args.split_stages,
        "mean_fresh_slow_share": round(statistics.fmean(fresh), 3),
        "mean_pooled_slow_share": round(statistics.fmean(pooled), 3),
        "suspected_first": sum(r["first_timing"].get("suspected", False) for r in runs),
        "all_correct": all(r["correct"] for r in runs),
    }  # fmt: skip
    print(json.dumps({"summary": summary, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
