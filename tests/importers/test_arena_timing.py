"""aka's timing helper in imported AgentKernelArena runners: the statistic it reports.

The helper is source text written into upstream runners, so these tests run that text."""

from __future__ import annotations

import random
import statistics
from typing import Any

import pytest

from aka.importers._arena_timing import AKA_PYTEST_PERF, AKA_TIMING_HELPER

STEP_MS = 0.0005
"""What CUDA events resolve: about half a microsecond."""


def helper() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(AKA_TIMING_HELPER, "aka_timing_helper", "exec"), namespace)
    return namespace


def event_times(true_ms: float, n: int, seed: int, jitter_ms: float = 0.0004) -> list[float]:
    """Runs of a kernel read through CUDA events: jittered, then cut to the events' step."""
    rng = random.Random(seed)
    return [round(rng.gauss(true_ms, jitter_ms) / STEP_MS) * STEP_MS for _ in range(n)]


def test_a_kernel_timed_against_itself_agrees_within_the_events_resolution() -> None:
    middle_mean = helper()["aka_middle_mean"]
    # A 12.24 us kernel: its runs read 12.0 or 12.5 us, so a median of each arm lands
    # on one step or the other, 4 % apart, depending on the draw.
    medians, means = [], []
    for seed in range(40):
        base, cand = event_times(0.01224, 100, seed), event_times(0.01224, 100, 1000 + seed)
        medians.append(statistics.median(base) / statistics.median(cand))
        means.append(middle_mean(base) / middle_mean(cand))
    # Why the median is not used: most draws land a step apart.
    assert sum(abs(r - 1) <= 0.02 for r in medians) < 30
    assert all(abs(r - 1) <= 0.02 for r in means)
    assert statistics.pstdev(means) < statistics.pstdev(medians) / 3


def test_a_one_percent_difference_below_the_step_is_seen() -> None:
    middle_mean = helper()["aka_middle_mean"]
    ratios = [
        middle_mean(event_times(0.01224 * 1.01, 100, seed))
        / middle_mean(event_times(0.01224, 100, 500 + seed))
        for seed in range(20)
    ]
    assert statistics.median(ratios) == pytest.approx(1.01, abs=0.004)


def test_outliers_do_not_move_it_as_they_move_a_mean() -> None:
    middle_mean = helper()["aka_middle_mean"]
    runs = [0.012] * 90 + [0.5] * 10  # ten runs preempted
    assert middle_mean(runs) == pytest.approx(0.012)
    assert middle_mean([0.02]) == 0.02 and middle_mean([0.01, 0.03]) == pytest.approx(0.02)


def test_aka_time_ms_reports_the_middle_mean_of_its_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    ns = helper()
    # Each run on the CPU reads perf_counter twice; feed it runs of known length.
    lengths = iter([0.001] * 6 + [0.002] * 2 + [0.009] * 2)  # the timed runs (warm-up untimed)
    clock = [0.0]
    ticks: list[float] = []

    def perf_counter() -> float:
        if not ticks:
            start = clock[0]
            clock[0] += next(lengths)
            ticks.extend([start, clock[0]])
        return ticks.pop(0)

    monkeypatch.setattr(time, "perf_counter", perf_counter)
    monkeypatch.delenv("AKA_TIMING_GATE", raising=False)
    ms = ns["aka_time_ms"](lambda: None, warmup=3, reps=10)
    # Runs of 1, 1, 1, 1, 1, 1, 2, 2, 9, 9 ms: the middle six (two cut at each end).
    assert ms == pytest.approx((1 + 1 + 1 + 1 + 2 + 2) / 6)


def test_pytest_reports_carry_the_middle_mean_as_the_case_time(tmp_path: Any) -> None:
    import json

    ns: dict[str, Any] = {}
    exec(compile(AKA_PYTEST_PERF, "performance_utils_pytest", "exec"), ns)
    times = [0.010] * 5 + [0.011] * 3 + [0.030] * 2
    ns["aka_time_samples"] = lambda fn, **kw: list(times)
    bench = ns["PytestBenchmarker"](lambda: None, "scale", ns["do_bench_config"](1, 10))
    result = bench.run_benchmark({"n": 4})
    assert result["timing_ms"]["median"] == pytest.approx(0.0105)  # upstream's field kept
    ns["save_all_benchmark_results"](str(tmp_path))
    report = json.loads((tmp_path / "performance_report.json").read_text())
    assert report[0]["execution_time_ms"] == pytest.approx(ns["aka_middle_mean"](times))
