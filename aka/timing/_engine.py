"""``measure_pair``: the one entry point that times a baseline against a candidate."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from aka.errors import InputError
from aka.timing._config import ENGINE_VERSION, TimingConfig
from aka.timing._device import device_fingerprint, parse_device, read_clocks
from aka.timing._result import PairTiming, summarize
from aka.timing._schedule import StopDecision, iter_orders, stop_decision
from aka.timing._stats import ratio_of_medians_ci, timer_resolution
from aka.timing._timers import CpuTimer, CudaTimer, Timer

__all__ = ["host_check", "measure_pair", "method", "pair_from_samples"]

Fn = Callable[[int], object]
Arms = tuple[list[float], list[float]]


@contextlib.contextmanager
def _on_device(kind: str, index: int) -> Iterator[None]:
    """Make ``cuda:index`` current so the callables' launches land on it."""
    if kind != "cuda":
        yield
        return
    import torch

    with torch.cuda.device(index):
        yield


def _sample_loop(
    timer: Timer, cfg: TimingConfig, n_sets: int
) -> tuple[Arms, Arms, int, StopDecision]:
    """Interleaved rounds until the stop rule fires; returns windows, host times, rounds."""
    orders = iter_orders(cfg.seed)
    windows: Arms = ([], [])
    hosts: Arms = ([], [])
    rounds, next_check = 0, cfg.min_samples
    t0 = time.perf_counter()
    while True:
        i = rounds % n_sets
        for arm in next(orders):
            w, h = timer.sample(arm, i)
            windows[arm].append(w)
            hosts[arm].append(h)
        rounds += 1
        elapsed = time.perf_counter() - t0
        if rounds < next_check and elapsed < cfg.max_time_s and rounds < cfg.max_samples:
            continue
        decision = stop_decision(
            windows[0],
            windows[1],
            target_rel_ci=cfg.target_rel_ci,
            elapsed_s=elapsed,
            max_time_s=cfg.max_time_s,
            min_samples=cfg.min_samples,
            max_samples=cfg.max_samples,
            level=cfg.level,
            resolution=timer_resolution(*windows),
        )
        if decision.stop:
            return windows, hosts, rounds, decision
        next_check = rounds + max(1, rounds // 16)  # checks cost O(n log n): space them


def host_check(
    cfg: TimingConfig, windows: Arms, hosts: Arms, *, applicable: bool, idle_excess_s: float
) -> dict[str, Any]:
    """Compare host time with event time per arm: a large excess means untimed work."""
    if not applicable:
        return {"applicable": False, "suspect": False}
    out: dict[str, Any] = {"applicable": True, "idle_excess_s": idle_excess_s}
    suspect = False
    for name, w, h in (("baseline", windows[0], hosts[0]), ("candidate", windows[1], hosts[1])):
        event = statistics.median(w)
        excess = statistics.median(hv - wv for hv, wv in zip(h, w, strict=True))
        excess -= idle_excess_s
        flag = excess > max(cfg.host_slack_s, 0.1 * event)
        out[name] = {"event_median_s": event, "host_median_s": statistics.median(h)}
        out[name]["excess_s"] = excess
        out[name]["suspect"] = flag
        suspect = suspect or flag
    out["suspect"] = suspect
    return out


def method(
    cfg: TimingConfig, *, timer: str, flush_bytes: int, pre_spin_s: float, inputs: str
) -> str:
    """The method string recorded with every measurement."""
    flush = f"{flush_bytes} B zeroed before each sample" if flush_bytes else "none"
    closing = "device-wide sync, host-time cross-check" if timer != "perf_counter" else "-"
    return (
        f"{ENGINE_VERSION}; timer={timer}; flush={flush}; "
        f"pre_spin={pre_spin_s * 1e6:.0f}us; window close={closing}; "
        f"interleaved A/B, balanced random order (seed {cfg.seed}); inputs={inputs}; "
        f"stop: both medians' {cfg.level:.0%} CI half-width <= {cfg.target_rel_ci:.2%} "
        f"(order statistics, >= {cfg.min_samples} samples) or {cfg.max_time_s:g} s "
        f"or {cfg.max_samples} samples; speedup = ratio of medians, paired bootstrap CI "
        f"({cfg.n_boot} resamples) widened by half a timer step + {cfg.floor_s * 1e9:g} ns "
        "per median"
    )


def pair_from_samples(
    windows: Arms,
    hosts: Arms,
    cfg: TimingConfig,
    *,
    method_text: str,
    timer: str,
    flush_bytes: int,
    host: dict[str, Any],
    rounds: int,
    stop_reason: str,
    fingerprint: dict[str, Any],
    wall_s: float,
    notes: tuple[str, ...] = (),
    clocks: dict[str, Any] | None = None,
) -> PairTiming:
    """Statistics of raw interleaved samples: medians, CIs, the speedup and its CI.

    Pure: the evaluator calls it on samples the sealed core took in the candidate's
    process, so no statistic is ever computed where candidate code runs.
    """
    resolution = timer_resolution(*windows)
    ratio, s_lo, s_hi = ratio_of_medians_ci(
        windows[0], windows[1], cfg.level, cfg.n_boot, cfg.seed, resolution
    )
    base, cand = (
        summarize(windows[0], cfg.level, resolution),
        summarize(windows[1], cfg.level, resolution),
    )
    widen = cfg.floor_s / base.median_s + cfg.floor_s / cand.median_s
    lo, hi = s_lo * (1.0 - widen), s_hi * (1.0 + widen)
    clocks = clocks or {}
    throttled = bool(
        (clocks.get("before") or {}).get("throttled")
        or (clocks.get("after") or {}).get("throttled")
    )
    return PairTiming(
        baseline=base,
        candidate=cand,
        speedup=ratio,
        speedup_ci=(lo, hi),
        speedup_ci_sampling=(s_lo, s_hi),
        method=method_text,
        n_rounds=rounds,
        stop_reason=stop_reason,
        throttled=throttled,
        clocks=clocks,
        fingerprint=fingerprint,
        timer=timer,
        flush_bytes=flush_bytes,
        resolution_s=resolution,
        host_check=host,
        wall_s=wall_s,
        overhead_s=wall_s - sum(windows[0]) - sum(windows[1]),
        config=cfg.to_dict(),
        notes=notes,
    )


def measure_pair(
    baseline: Fn,
    candidate: Fn,
    *,
    device: str = "cpu",
    config: TimingConfig | None = None,
    n_input_sets: int = 1,
) -> PairTiming:
    """Time ``baseline`` against ``candidate`` on one device, interleaved, until precise.

    Args:
        baseline: called as ``baseline(i)`` with an input-set index ``i`` in
            ``range(n_input_sets)``; it must run the work on its own inputs for set ``i``.
        candidate: the same contract.
        device: ``cpu`` (host ``perf_counter``) or ``cuda`` / ``cuda:N`` (events, L2
            flush, CUDA graphs when short).
        config: measurement settings; defaults to :class:`TimingConfig()`.
        n_input_sets: how many input sets the callables rotate through (size them so
            together they exceed the L2).

    Returns:
        A :class:`PairTiming` whose ``speedup`` is baseline median / candidate median.

    Raises:
        InputError: bad device, config or ``n_input_sets``; a forced graph capture that
            fails.
    """
    cfg = config or TimingConfig()
    if n_input_sets < 1:
        raise InputError(f"n_input_sets={n_input_sets}", where="n_input_sets", fix="use >= 1")
    kind, index = parse_device(device)
    wall0 = time.perf_counter()
    clocks_before = read_clocks(device)
    timer: Timer = CpuTimer(cfg) if kind == "cpu" else CudaTimer(index, cfg)
    try:
        with _on_device(kind, index):
            notes = timer.prepare((baseline, candidate), n_input_sets)
            windows, hosts, rounds, decision = _sample_loop(timer, cfg, n_input_sets)
            host = host_check(
                cfg,
                windows,
                hosts,
                applicable=not isinstance(timer, CpuTimer),
                idle_excess_s=timer.idle_excess_s,
            )
    finally:
        timer.close()
    clocks_after = read_clocks(device)
    return pair_from_samples(
        windows,
        hosts,
        cfg,
        method_text=method(
            cfg,
            timer=timer.name,
            flush_bytes=timer.flush_bytes,
            pre_spin_s=timer.pre_spin_s,
            inputs=f"{n_input_sets} set(s) rotated",
        ),
        timer=timer.name,
        flush_bytes=timer.flush_bytes,
        host=host,
        rounds=rounds,
        stop_reason=decision.reason or "max_samples",
        fingerprint=device_fingerprint(device),
        wall_s=time.perf_counter() - wall0,
        notes=tuple(notes),
        clocks={"before": clocks_before, "after": clocks_after},
    )
