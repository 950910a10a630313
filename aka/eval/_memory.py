"""How much of a GPU's memory is free, asked of the driver.

Evaluations in flight and validations run at once share one GPU's memory: both wait to
start while too little of it is free (:data:`ADMIT_FREE`), and what failed for want of it
beside others is run again alone.

The driver is asked through NVML (NVIDIA's management library, through its own Python
binding ``nvidia-ml-py``) in this process: a reading costs microseconds and starts no CUDA
context. Where NVML cannot be loaded, ``nvidia-smi`` answers the same question in a child
process, at tens to hundreds of milliseconds a reading, which every start beside others
waits for, one start at a time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

__all__ = [
    "ADMIT_FREE",
    "MEMORY_SENSITIVE",
    "gpu_free_fraction",
    "memory_reader",
    "short_of_memory",
]

ADMIT_FREE = 0.25
"""Work starts on a GPU beside other work only while this fraction of its memory is free:
five to ten KernelBench validations at once ran an H200 out of memory, and 12 of the
bundled tasks' evaluations at once an 80 GB H100 (docs/benchmarks.md)."""


def gpu_free_fraction(device: str) -> float | None:
    """The fraction of ``device``'s memory free now (None: unknown).

    Asked of the driver (NVML, else ``nvidia-smi``) so that this process never starts CUDA
    itself; the index follows ``CUDA_VISIBLE_DEVICES`` as the evaluation processes see it.
    """
    if not device.startswith("cuda"):
        return None
    target = _physical(device)
    lib = _nvml()
    if lib is not None:
        try:
            handle = (lib.nvmlDeviceGetHandleByIndex(int(target)) if target.isdigit()
                      else lib.nvmlDeviceGetHandleByUUID(target))  # fmt: skip
            memory = lib.nvmlDeviceGetMemoryInfo(handle)
            return float(memory.free) / memory.total if memory.total > 0 else None
        except (lib.NVMLError, ValueError, TypeError):
            pass  # an identifier NVML does not know: the tool may
    return _smi_free_fraction(target)


def memory_reader() -> str | None:
    """What answers :func:`gpu_free_fraction` in this process: ``"nvml"``, ``"nvidia-smi"``,
    or None (neither: every reading is unknown and admission never waits)."""
    if _nvml() is not None:
        return "nvml"
    return "nvidia-smi" if shutil.which("nvidia-smi") else None


def _physical(device: str) -> str:
    """The driver's name for ``device`` (``cuda:N`` under ``CUDA_VISIBLE_DEVICES``): an
    index or a UUID, as both NVML and ``nvidia-smi -i`` take it."""
    index = device.partition(":")[2] or "0"
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if visible and index.isdigit() and int(index) < len(visible):
        index = visible[int(index)].strip()
    return index


_NVML_LOCK = threading.Lock()
_NVML: list[Any] = []
"""The loaded NVML binding, or None where it cannot be loaded: tried once per process."""


def _nvml() -> Any:
    """The NVML binding, initialized once; None without the package or the driver."""
    with _NVML_LOCK:
        if not _NVML:
            try:
                import pynvml  # optional: absent or driverless hosts fall back

                pynvml.nvmlInit()
                _NVML.append(pynvml)
            except Exception:  # any failure to load means "ask the tool"
                _NVML.append(None)
        return _NVML[0]


def _smi_free_fraction(target: str) -> float | None:
    """The free share of ``target`` as ``nvidia-smi`` reports it (None: no tool, or no answer)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    query = [exe, "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"]
    try:
        done = subprocess.run([*query, "-i", target], capture_output=True, text=True,
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
