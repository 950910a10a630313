"""The two timers behind one interface: host ``perf_counter`` on CPU, CUDA events (plain
or around a CUDA graph replay) on GPU.

A timer is prepared once per pair (warm-up, timer choice, graph capture, calibration)
and then asked for one sample of arm 0 or 1 on input set ``i``; it answers the window's
time and the host time around it, both in seconds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from aka.errors import InputError
from aka.timing._config import TimingConfig

__all__ = ["CpuTimer", "CudaTimer", "Timer"]

Fn = Callable[[int], object]


class Timer:
    """Interface of both timers (a plain base class: two implementations, no registry)."""

    name: str = "timer"
    flush_bytes: int = 0
    pre_spin_s: float = 0.0
    idle_excess_s: float = 0.0

    def prepare(self, arms: tuple[Fn, Fn], n_sets: int) -> list[str]:
        """Warm up both arms, choose how to time them; returns notes on the choice."""
        raise NotImplementedError

    def sample(self, arm: int, i: int) -> tuple[float, float]:
        """One timed call of ``arm`` on input set ``i``: ``(window_s, host_s)``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release buffers and graphs."""


class CpuTimer(Timer):
    """``time.perf_counter`` around the call: the whole call is the window."""

    name = "perf_counter"

    def __init__(self, cfg: TimingConfig) -> None:
        self.cfg = cfg
        self.arms: tuple[Fn, Fn] | None = None

    def prepare(self, arms: tuple[Fn, Fn], n_sets: int) -> list[str]:
        self.arms = arms
        for k in range(self.cfg.warmup):
            for fn in arms:
                fn(k % n_sets)
        return []

    def sample(self, arm: int, i: int) -> tuple[float, float]:
        assert self.arms is not None
        fn = self.arms[arm]
        t0 = time.perf_counter()
        fn(i)
        dt = time.perf_counter() - t0
        return dt, dt


class CudaTimer(Timer):
    """CUDA events around each call, optionally replaying a captured CUDA graph.

    Each sample: zero the flush buffer (evicts L2), queue a short GPU busy-wait, record
    the start event, launch, record the end event, then synchronize the whole device
    (so work on side streams finishes inside the host window) and read both clocks.
    The busy-wait keeps the GPU occupied while the host queues the launch, so the
    window does not include idle launch latency.
    """

    def __init__(self, index: int, cfg: TimingConfig) -> None:
        import torch

        if not torch.cuda.is_available() or index >= torch.cuda.device_count():
            raise InputError(
                f"CUDA device {index} is not available",
                where="device",
                fix="use device='cpu' or a visible CUDA device",
            )
        self.torch = torch
        self.cfg = cfg
        self.dev = torch.device("cuda", index)
        props = torch.cuda.get_device_properties(index)
        l2 = int(getattr(props, "L2_cache_size", 0)) or 64 * 2**20
        self.flush_bytes = int(cfg.flush_factor * l2) if cfg.l2_flush else 0
        self.flush_buf = (
            torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=self.dev)
            if self.flush_bytes
            else None
        )
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        # The stream the callables launch on, looked up once: finding the current stream
        # and device again for every record and sync is host time in every window.
        self.stream = torch.cuda.current_stream(self.dev)
        self.spin_cycles = 0
        self.arms: tuple[Fn, Fn] | None = None
        self.graphs: list[list[Any]] | None = None
        self.keep: list[Any] = []
        self.name = "cuda_event"

    # -- one window -------------------------------------------------------------------
    def _window(self, run: Callable[[], object]) -> tuple[float, float]:
        torch = self.torch
        if self.flush_buf is not None:
            self.flush_buf.zero_()
        if self.spin_cycles:
            torch.cuda._sleep(self.spin_cycles)
        h0 = time.perf_counter()
        self.start.record(self.stream)
        run()
        self.end.record(self.stream)
        torch.cuda.synchronize(self.dev)
        h1 = time.perf_counter()
        return self.start.elapsed_time(self.end) / 1e3, h1 - h0

    def sample(self, arm: int, i: int) -> tuple[float, float]:
        if self.graphs is not None:
            return self._window(self.graphs[arm][i].replay)
        assert self.arms is not None
        fn = self.arms[arm]
        return self._window(lambda: fn(i))

    # -- preparation ------------------------------------------------------------------
    def prepare(self, arms: tuple[Fn, Fn], n_sets: int) -> list[str]:
        self.arms = arms
        warm: tuple[list[float], list[float]] = ([], [])
        for k in range(max(self.cfg.warmup, 1)):
            for a in (0, 1):
                warm[a].append(self.sample(a, k % n_sets)[0])
        self._calibrate_spin()
        notes: list[str] = []
        fast = min(statistics.median(warm[0]), statistics.median(warm[1]))
        want = self.cfg.use_cuda_graph
        if want is None:
            want = fast < self.cfg.graph_below_s
        if want:
            try:
                self._capture(arms, n_sets)
                self.name = "cuda_graph"
            except Exception as exc:  # a callable that cannot be captured (host sync, ...)
                self.graphs, self.keep = None, []
                self.torch.cuda.synchronize(self.dev)
                if self.cfg.use_cuda_graph:
                    raise InputError(
                        f"CUDA graph capture failed: {exc}",
                        where="TimingConfig.use_cuda_graph",
                        fix="use use_cuda_graph=None or False for callables that sync",
                    ) from exc
                notes.append(f"graph capture failed, timed eagerly: {type(exc).__name__}")
        self._calibrate_host()
        return notes

    def _calibrate_spin(self) -> None:
        """Cycles for ``pre_spin_s`` of busy-wait at the current (warmed-up) clock."""
        torch = self.torch
        if self.cfg.pre_spin_s <= 0.0:
            return
        probe = 200_000
        rates = []
        for _ in range(3):
            self.start.record(self.stream)
            torch.cuda._sleep(probe)
            self.end.record(self.stream)
            torch.cuda.synchronize(self.dev)
            rates.append(probe / max(self.start.elapsed_time(self.end) / 1e3, 1e-9))
        self.spin_cycles = int(statistics.median(rates) * self.cfg.pre_spin_s)
        self.pre_spin_s = self.cfg.pre_spin_s

    def _capture(self, arms: tuple[Fn, Fn], n_sets: int) -> None:
        torch = self.torch
        graphs: list[list[Any]] = [[], []]
        for a, fn in enumerate(arms):
            for i in range(n_sets):
                side = torch.cuda.Stream(self.dev)
                side.wait_stream(torch.cuda.current_stream(self.dev))
                with torch.cuda.stream(side):
                    fn(i)  # allocator and library handles settle outside the capture
                torch.cuda.current_stream(self.dev).wait_stream(side)
                torch.cuda.synchronize(self.dev)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    self.keep.append(fn(i))
                graphs[a].append(g)
        torch.cuda.synchronize(self.dev)
        self.graphs = graphs
        for a in (0, 1):  # one replay each so the first timed replay is not a first use
            for g in graphs[a]:
                g.replay()
        torch.cuda.synchronize(self.dev)

    def _calibrate_host(self) -> None:
        """Host-minus-event time of an empty window: the cross-check's zero point."""
        excess = []
        for _ in range(15):
            event_s, host_s = self._window(lambda: None)
            excess.append(host_s - event_s)
        self.idle_excess_s = statistics.median(excess)

    def close(self) -> None:
        self.graphs, self.keep, self.flush_buf = None, [], None
