"""How much of a GPU's memory is free, asked of the driver's tool.

Evaluations in flight and validations run at once share one GPU's memory: both wait to
start while too little of it is free (:data:`ADMIT_FREE`), and what failed for want of it
beside others is run again alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence

__all__ = ["ADMIT_FREE", "MEMORY_SENSITIVE", "gpu_free_fraction", "short_of_memory"]

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


_OUT_OF_MEMORY = re.compile(r"out of memory|OutOfMemoryError|cudaErrorMemoryAllocation")
MEMORY_SENSITIVE = frozenset({"uninitialized_read"})
"""Flags that memory pressure from other evaluations can raise on an honest kernel: two
runs over differently poisoned memory differ when an allocation the check poisons fails
or moves (seen with 12 and 16 evaluations in flight on an 80 GB H100, docs/benchmarks.md)."""


def short_of_memory(error: str | None, flags: Sequence[str]) -> str | None:
    """Why a verdict (its ``error`` and hack ``flags``) may be the device's want of memory
    rather than the candidate's doing: a CUDA out-of-memory error, or only
    memory-sensitive flags; else None."""
    if error and _OUT_OF_MEMORY.search(error):
        return "ran out of device memory"
    if flags and set(flags) <= MEMORY_SENSITIVE:
        return f"was flagged {', '.join(flags)}"
    return None
