"""How much of a GPU's memory is free, asked of the driver's tool.

Evaluations in flight and validations run at once share one GPU's memory: both wait to
start while too little of it is free (:data:`ADMIT_FREE`), and what failed for want of it
beside others is run again alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess

__all__ = ["ADMIT_FREE", "gpu_free_fraction"]

ADMIT_FREE = 0.25
"""Work starts on a GPU beside other work only while this fraction of its memory is free:
five to ten KernelBench validations at once ran an H200 out of memory, and 12 of the
bundled tasks' evaluations at once an 80 GB H100 (docs/benchmarks.md)."""


def gpu_free_fraction(device: str) -> float | None:
    """The fraction of ``device``'s memory free now, from ``nvidia-smi`` (None: unknown).

    Asked of the driver's tool so that this process never starts CUDA itself; the
    index follows ``CUDA_VISIBLE_DEVICES`` as the evaluation processes see it.
    """
    exe = shutil.which("nvidia-smi")
    if exe is None or not device.startswith("cuda"):
        return None
    index = device.partition(":")[2] or "0"
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if visible and index.isdigit() and int(index) < len(visible):
        index = visible[int(index)].strip()
    query = [exe, "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"]
    try:
        done = subprocess.run([*query, "-i", index], capture_output=True, text=True,
                              timeout=10, check=True)  # fmt: skip
        used, total = (float(v) for v in done.stdout.strip().splitlines()[0].split(","))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return 1.0 - used / total if total > 0 else None
