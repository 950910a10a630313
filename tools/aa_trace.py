"""Raw A/A samples of warm evaluations, for finding where an arm's bias comes from.

Each bundled Triton task's baseline is evaluated as its own candidate (as ``aka bench
eval`` does), and every timed shape's raw windows of both arms are kept in round order,
with the stop reason and the speedup the verdict reported. ``--out`` gets JSON: one row
per (pass, task, shape). Reading it: a ratio off 1 with both series flat points at the
arms (buffers, inputs); a ratio off 1 only during a stretch of rounds points at
something else running on the device then.

    python3 tools/aa_trace.py --device cuda --tasks 3 --passes 4 --out aa_trace.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from aka.cli._bench_eval import TASKS_ROOT, _job, lay_out_baseline, triton_tasks
from aka.eval import current_workers
from aka.eval._pipeline import run_processes, timing_results


def trace(task: Path, device: str) -> list[dict[str, Any]]:
    """One evaluation of ``task``'s baseline as its candidate; raw samples per shape."""
    job = _job(task, device)
    with tempfile.TemporaryDirectory(prefix="aka-aa-trace-") as tmp:
        root = lay_out_baseline(task, Path(tmp))
        _run, assembled, _checked = run_processes(job, root, workers=current_workers())
    stats = timing_results(job, assembled["timing"])
    rows = []
    for item, st in zip(assembled["timing"], stats, strict=True):
        raw = item["raw"]
        base, cand = raw["windows"]
        rows.append({
            "task": str(task.relative_to(TASKS_ROOT)), "shape": item["shape"],
            "speedup": st["pair"]["speedup"], "stop": raw.get("stop"), "timer": raw.get("timer"),
            "median_us": [statistics.median(base) * 1e6, statistics.median(cand) * 1e6],
            "windows_us": [[round(x * 1e6, 3) for x in base], [round(x * 1e6, 3) for x in cand]],
            "hosts_us": [[round(x * 1e6, 3) for x in h] for h in raw["hosts"]],
        })  # fmt: skip
    return rows


def main() -> None:
    """Evaluate the first ``--tasks`` tasks ``--passes`` times; write the rows."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--passes", type=int, default=4)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    for p in range(args.passes):
        for task in triton_tasks(args.tasks):
            for row in trace(task, args.device):
                rows.append({"pass": p, **row})
                print(p, row["task"], row["shape"], round(row["speedup"], 4), row["stop"],
                      len(row["windows_us"][0]), flush=True)  # fmt: skip
    Path(args.out).write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
