"""One timing engine for every task and device: flushed, interleaved, noise-aware.

``measure_pair`` times a baseline against a candidate in the same process, alternating
them round by round, and stops when both medians are known to a relative precision (or a
budget runs out); the speedup is a ratio of medians with a bootstrap confidence interval.
On GPU each sample is an L2-flushed CUDA-event window (a CUDA graph replay for short
work) closed by a device-wide sync and cross-checked with the host clock; on CPU it is a
``perf_counter`` window, so everything except real speed is testable without a GPU.

torch is imported lazily inside the GPU paths: importing this package never loads it.
See docs/timing.md for the method and the evidence behind each choice.
"""

from aka.timing._bench_report import aa_bar, aa_deviation
from aka.timing._bench_report import render_markdown as render_bench_report
from aka.timing._config import ENGINE_VERSION, TimingConfig
from aka.timing._device import CARD_KEYS, device_fingerprint, device_kind, read_clocks
from aka.timing._engine import host_check, measure_pair, method, pair_from_samples
from aka.timing._result import PairTiming, SampleStats, summarize
from aka.timing._schedule import StopDecision, interleaved_orders, iter_orders, stop_decision
from aka.timing._stats import (
    bootstrap_median_ci,
    median_ci,
    order_stat_coverage,
    ratio_of_medians_ci,
    rel_halfwidth,
    timer_resolution,
)

__all__ = [
    "CARD_KEYS",
    "ENGINE_VERSION",
    "PairTiming",
    "SampleStats",
    "StopDecision",
    "TimingConfig",
    "aa_bar",
    "aa_deviation",
    "bootstrap_median_ci",
    "device_fingerprint",
    "device_kind",
    "host_check",
    "interleaved_orders",
    "iter_orders",
    "measure_pair",
    "median_ci",
    "method",
    "order_stat_coverage",
    "pair_from_samples",
    "ratio_of_medians_ci",
    "read_clocks",
    "rel_halfwidth",
    "render_bench_report",
    "stop_decision",
    "summarize",
    "timer_resolution",
]
