"""What one benchmark process measures: A/A pairs, sensitivity pairs, and the same
kernels through two common harnesses (``triton.testing.do_bench`` and a KernelBench-style
event loop), so the engine's gain over them is visible in one run.

Each process builds every kernel's inputs once, baseline and candidate on separate
buffers filled with the same values (an honest A/A: same work, different addresses), then
runs ``rounds`` rounds; each round times every kernel once with every method.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aka.timing._config import TimingConfig
from aka.timing._device import device_fingerprint
from aka.timing._engine import measure_pair

__all__ = ["CPU_KERNELS", "GPU_KERNELS", "SENSITIVITY", "KernelSpec", "child_run"]

Fn = Callable[[int], object]
N_SETS = 2


@dataclass(frozen=True)
class KernelSpec:
    """A benchmark kernel: ``make(scale, seed)`` returns a callable over input sets."""

    name: str
    make: Callable[[float, int], Fn]


def _softmax(rows: int, cols: int) -> Callable[[float, int], Fn]:
    def make(scale: float, seed: int) -> Fn:
        import torch

        g = torch.Generator(device="cuda").manual_seed(seed)
        r = max(1, round(rows * scale))
        xs = [torch.randn(r, cols, device="cuda", generator=g) for _ in range(N_SETS)]
        return lambda i: torch.softmax(xs[i], dim=-1)

    return make


def _add(n: int) -> Callable[[float, int], Fn]:
    def make(scale: float, seed: int) -> Fn:
        import torch

        g = torch.Generator(device="cuda").manual_seed(seed)
        m = round(n * scale)
        xs = [torch.randn(m, device="cuda", generator=g) for _ in range(N_SETS)]
        ys = [torch.randn(m, device="cuda", generator=g) for _ in range(N_SETS)]
        return lambda i: torch.add(xs[i], ys[i])

    return make


def _mm(m: int, n: int, k: int) -> Callable[[float, int], Fn]:
    def make(scale: float, seed: int) -> Fn:
        import torch

        g = torch.Generator(device="cuda").manual_seed(seed)
        mm = round(m * scale)
        a = [torch.randn(mm, k, device="cuda", generator=g, dtype=torch.bfloat16) for _ in "ab"]
        b = [torch.randn(k, n, device="cuda", generator=g, dtype=torch.bfloat16) for _ in "ab"]
        return lambda i: torch.mm(a[i], b[i])

    return make


def _np_sort(n: int) -> Callable[[float, int], Fn]:
    def make(scale: float, seed: int) -> Fn:
        import numpy as np

        rng = np.random.default_rng(seed)
        xs = [rng.standard_normal(round(n * scale)) for _ in range(N_SETS)]
        return lambda i: float(np.sort(xs[i])[0])

    return make


# ~3 us to ~3 ms on an H200 (docs/benchmarks.md has the measured medians).
GPU_KERNELS: tuple[KernelSpec, ...] = (
    KernelSpec("softmax_64x1024_f32", _softmax(64, 1024)),
    KernelSpec("add_1M_f32", _add(1 << 20)),
    KernelSpec("softmax_1024x4096_f32", _softmax(1024, 4096)),
    KernelSpec("softmax_8192x4096_f32", _softmax(8192, 4096)),
    KernelSpec("mm_4096_bf16", _mm(4096, 4096, 4096)),
    KernelSpec("mm_8192x8192x16384_bf16", _mm(8192, 8192, 16384)),
)
CPU_KERNELS: tuple[KernelSpec, ...] = (
    KernelSpec("sort_2k_f64", _np_sort(2_000)),
    KernelSpec("sort_20k_f64", _np_sort(20_000)),
)
# Sensitivity: kernel -> work factor of the slower variant, sized so the variant takes
# about 10 % longer (short kernels have a fixed cost, so they need more than 10 % more
# work; the factors come from a first H200 run, and the report shows the measured ratio).
SENSITIVITY: dict[str, dict[str, float]] = {
    "cuda": {
        "add_1M_f32": 1.34,
        "softmax_1024x4096_f32": 1.13,
        "softmax_8192x4096_f32": 1.1,
        "mm_4096_bf16": 1.1,
    },
    "cpu": {"sort_20k_f64": 1.1},
}


def _kb_loop(fn: Callable[[], object], flush: Any) -> float:
    """KernelBench-style: 3 warm-ups, 100 trials, flush, events, sync; the mean (s)."""
    import torch

    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    total = 0.0
    for _ in range(100):
        torch.cuda.synchronize()
        flush.zero_()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        total += start.elapsed_time(end)
    return total / 100 / 1e3


def _comparators(a: Fn, b: Fn, a_first: bool, flush: Any) -> dict[str, float]:
    """A/A ratios of the two reference harnesses (order alternates between rounds)."""
    import triton.testing

    order = [("a", a), ("b", b)] if a_first else [("b", b), ("a", a)]
    t: dict[str, dict[str, float]] = {"do_bench": {}, "kernelbench": {}}
    for key, fn in order:
        t["do_bench"][key] = triton.testing.do_bench(functools.partial(fn, 0)) / 1e3
    for key, fn in order:
        t["kernelbench"][key] = _kb_loop(functools.partial(fn, 0), flush)
    return {m: v["a"] / v["b"] for m, v in t.items()} | {f"{m}_a_s": v["a"] for m, v in t.items()}


def _pair_record(pair: Any) -> dict[str, Any]:
    """The summary of one engine measurement kept by the bench (no raw samples)."""
    after = pair.clocks.get("after", {})
    return {
        "speedup": pair.speedup,
        "ci": list(pair.speedup_ci),
        "ci_sampling": list(pair.speedup_ci_sampling),
        "significant": pair.significant,
        "median_s": pair.baseline.median_s,
        "n": pair.baseline.n,
        "rel_ci": max(pair.baseline.rel_ci_halfwidth, pair.candidate.rel_ci_halfwidth),
        "timer": pair.timer,
        "stop": pair.stop_reason,
        "wall_s": pair.wall_s,
        "overhead_s": pair.overhead_s,
        "throttled": pair.throttled,
        "host_suspect": pair.host_check.get("suspect", False),
        "sm_clock_mhz": after.get("sm_clock_mhz"),
        "temperature_c": after.get("temperature_c"),
        "resolution_s": pair.resolution_s,
    }


def child_run(
    device: str, rounds: int, seed: int, deadline: float, comparators: bool, max_time_s: float
) -> dict[str, Any]:
    """One benchmark process: A/A and sensitivity rounds until done or past ``deadline``."""
    gpu = device != "cpu"
    specs = GPU_KERNELS if gpu else CPU_KERNELS
    sens = SENSITIVITY["cuda" if gpu else "cpu"]
    arms = {s.name: (s.make(1.0, seed), s.make(1.0, seed)) for s in specs}
    slow = {s.name: s.make(sens[s.name], seed) for s in specs if s.name in sens}
    flush = None
    if gpu and comparators:
        import torch

        flush = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
    out: dict[str, Any] = {"seed": seed, "aa": [], "sens": [], "rounds_done": 0}
    out["fingerprint"] = device_fingerprint(device)
    rng = random.Random(seed)
    for r in range(rounds):
        if time.time() > deadline:
            break
        for s in specs:
            cfg = TimingConfig(seed=rng.randrange(2**31), max_time_s=max_time_s)
            a, b = arms[s.name]
            rec = _pair_record(measure_pair(a, b, device=device, config=cfg, n_input_sets=N_SETS))
            rec |= {"kernel": s.name, "round": r}
            if flush is not None and r % 2 == 0:  # the reference harnesses: every other round
                rec |= _comparators(a, b, r % 2 == 0, flush)
            out["aa"].append(rec)
            if s.name in slow:
                cfg = TimingConfig(seed=rng.randrange(2**31), max_time_s=max_time_s)
                p = measure_pair(a, slow[s.name], device=device, config=cfg, n_input_sets=N_SETS)
                rec = _pair_record(p) | {"kernel": s.name, "round": r, "work": sens[s.name]}
                out["sens"].append(rec)
        out["rounds_done"] = r + 1
    return out
