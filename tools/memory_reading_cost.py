"""What one free-memory reading costs: ``nvidia-smi`` in a child process against NVML in
this one (the reading that admission waits for, ``aka.eval._memory``).

Usage::

    python tools/memory_reading_cost.py [--device cuda:0] [--n 5]

Prints which reader ``gpu_free_fraction`` uses here, the seconds of each reading of
either kind, and the free share NVML read last.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time

from aka.eval import _memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--n", type=int, default=5)
    args = parser.parse_args()
    smi: list[float] = []
    for _ in range(args.n if shutil.which("nvidia-smi") else 0):
        start = time.perf_counter()  # the fallback admission uses, as it asks
        _memory._smi_free_fraction(_memory._physical(args.device))
        smi.append(round(time.perf_counter() - start, 6))
    reads: list[float] = []
    free = None
    for _ in range(args.n):
        start = time.perf_counter()
        free = _memory.gpu_free_fraction(args.device)
        reads.append(round(time.perf_counter() - start, 6))
    print(json.dumps({"reader": _memory.memory_reader(), "nvidia_smi_s": smi,
                      "gpu_free_fraction_s": reads, "free_fraction": free}))  # fmt: skip


if __name__ == "__main__":
    main()
