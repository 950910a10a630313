"""How processes that share one GPU slow each other down.

Evaluations in flight on one GPU each run in processes of their own. Beside seven others,
an evaluation's correctness and checker stages take three to five times as long as alone,
while the host's cores are mostly idle (docs/benchmarks.md). This measures what a process
on a shared GPU pays, for N processes at once (each started together, after a barrier):

- ``sync_us``: a tiny kernel launched and waited for (``torch.cuda.synchronize``), the
  round trip a correctness check makes for every output it copies back;
- ``launch_us``: a tiny kernel launched, not waited for (the host's share alone);
- ``python_us``: a loop of plain Python with no GPU call (the host's cores alone);
- ``compile_s``: Triton compiling a kernel it has not seen (a constant unique to the
  process and round), CPU work that calls the driver only to load the result;
- ``copy_us``: a 4 MiB device-to-host copy (what the checker reads of each output).

If ``sync_us`` grows with N while ``python_us`` does not, the processes wait on each
other's GPU contexts (time-slicing), not on the host.

    python tools/gpu_share.py --counts 1,2,4,8 --seconds 2 --out share.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
from typing import Any


def _loop(fn: Any, seconds: float) -> float:
    """Microseconds per call of ``fn`` over about ``seconds`` (the median of 20 slices)."""
    per: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t, n = time.perf_counter(), 0
        while n < 50:
            fn()
            n += 1
        per.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(per)


def _worker(rank: int, seconds: float, barrier: Any, queue: Any) -> None:
    """One process's measurements, each started together with the other processes'."""
    t0 = time.perf_counter()
    import torch
    import triton
    import triton.language as tl

    x = torch.zeros(256, device="cuda")
    big = torch.empty(1 << 20, device="cuda")
    host = torch.empty(1 << 20, pin_memory=True)
    torch.cuda.synchronize()
    out: dict[str, Any] = {"rank": rank, "init_s": time.perf_counter() - t0}

    @triton.jit
    def add(p, n, k: tl.constexpr):  # type: ignore[no-untyped-def]
        i = tl.arange(0, 256)
        tl.store(p + i, tl.load(p + i, mask=i < n) + k, mask=i < n)

    def sync() -> None:
        x.add_(1)
        torch.cuda.synchronize()

    def copy() -> None:
        host.copy_(big, non_blocking=False)

    counter = [0]

    def python() -> None:
        counter[0] = sum(range(200)) + counter[0] % 7

    barrier.wait()
    out["sync_us"] = _loop(sync, seconds)
    barrier.wait()
    out["launch_us"] = _loop(lambda: x.add_(1), seconds)
    torch.cuda.synchronize()
    barrier.wait()
    out["python_us"] = _loop(python, seconds)
    barrier.wait()
    out["copy_us"] = _loop(copy, seconds)
    barrier.wait()
    compiles = []
    for r in range(3):
        t = time.perf_counter()
        add[(1,)](x, 256, k=1000 * (rank + 1) + r + int(time.time()) % 100000 * 1000)
        torch.cuda.synchronize()
        compiles.append(time.perf_counter() - t)
    out["compile_s"] = statistics.median(compiles)
    queue.put(out)


def measure(count: int, seconds: float) -> dict[str, Any]:
    """Every process's numbers for ``count`` at once, and their medians."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(count), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, seconds, barrier, queue)) for r in range(count)]
    for p in procs:
        p.start()
    rows = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    keys = ("init_s", "sync_us", "launch_us", "python_us", "copy_us", "compile_s")
    return {"processes": count,
            "median": {k: round(statistics.median(r[k] for r in rows), 3) for k in keys},
            "rows": rows}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--counts", default="1,2,4,8")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--out")
    args = parser.parse_args()
    report = [measure(int(n), args.seconds) for n in args.counts.split(",")]
    for r in report:
        print(r["processes"], r["median"], flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=2)


if __name__ == "__main__":
    main()
