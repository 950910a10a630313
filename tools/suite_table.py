"""Render ``tools/gpu_suite.py``'s JSON as the Markdown table in docs/tasks.md.

Usage::

    python tools/suite_table.py suite.json > table.md

One row per task and tuning shape: the baseline's median time, its A/A ratio (the
baseline timed against itself), achieved bandwidth and FLOP/s from the reference's
``work()``, and the fraction of the H200 ceiling it reaches (the larger of bandwidth over
4.3 TB/s and FLOP/s over 790 TFLOP/s): one minus that is the headroom an agent has.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _shape(shape: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def render(report: dict[str, Any]) -> str:
    """The table, then one line per task that failed."""
    lines = [
        "| task | shape | dtype | median µs | A/A | GB/s | TFLOP/s | of ceiling |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    failed = []
    for task in report["tasks"]:
        if not task.get("ok"):
            bad = [c for c in task.get("cases", []) if not c.get("ok")]
            failed.append(f"- `{task['task']}`: {task.get('error') or bad[:2]}")
        for row in task.get("timing", []):
            lines.append(
                f"| {task['task']} | {_shape(row['shape'])} | {row['dtype']} "
                f"| {row['median_us']:.1f} | {row['aa_ratio']:.3f} "
                f"| {row.get('gb_per_s', 0):,.0f} | {row.get('tflop_per_s', 0):.1f} "
                f"| {row.get('sol_fraction', 0):.0%} |"
            )
    if failed:
        lines += ["", "Failed:", *failed]
    return "\n".join(lines)


def main() -> None:
    """Print the table for the JSON file named on the command line."""
    print(render(json.loads(Path(sys.argv[1]).read_text())))


if __name__ == "__main__":
    main()
