"""aka's timing helper in imported AgentKernelArena runners: the statistic it reports.

The helper is source text written into upstream runners, so these tests run that text."""

from __future__ import annotations

import math
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


def event_times(true_ms: float, n: int, rng: random.Random, slow: float = 0.0) -> list[float]:
    """Runs of a kernel read through CUDA events: a little jitter, the start at a random
    phase of the timer's tick, both ends read in whole ticks; ``slow``: the share of runs
    preempted (three times as long)."""
    out = []
    for _ in range(n):
        phase = rng.random() * STEP_MS
        took = rng.gauss(true_ms, true_ms * 0.002) * (3 if rng.random() < slow else 1)
        out.append((math.floor((phase + took) / STEP_MS) - math.floor(phase / STEP_MS)) * STEP_MS)
    return out


@pytest.mark.parametrize("slow", [0.0, 0.1])
def test_a_kernel_timed_against_itself_agrees_within_the_events_resolution(slow: float) -> None:
    typical = helper()["aka_near_median_mean"]
    rng = random.Random(7)
    # A 12.24 us kernel reads 12.0 or 12.5 us: the median of each arm lands on one step
    # or the other, 4 % apart, depending on the draw.
    medians, means = [], []
    for _ in range(60):
        base, cand = event_times(0.01224, 100, rng, slow), event_times(0.01224, 100, rng, slow)
        medians.append(statistics.median(base) / statistics.median(cand))
        means.append(typical(base) / typical(cand))
    assert sum(abs(r - 1) <= 0.02 for r in medians) < 45  # why the median is not used
    assert all(abs(r - 1) <= 0.01 for r in means)


@pytest.mark.parametrize("true_ms", [0.0121, 0.01224, 0.0124, 0.0033])
@pytest.mark.parametrize("slow", [0.0, 0.1])
def test_it_reads_a_kernel_s_time_between_the_steps(true_ms: float, slow: float) -> None:
    typical = helper()["aka_near_median_mean"]
    rng = random.Random(11)
    found = statistics.fmean(typical(event_times(true_ms, 100, rng, slow)) for _ in range(50))
    assert found == pytest.approx(true_ms, rel=0.003)
    # The median sits on a step (12.0 or 12.5, 3.5 for the 3.3 us kernel).
    median = statistics.median(event_times(true_ms, 100, rng, slow))
    assert median != pytest.approx(true_ms, rel=0.003)


def test_a_one_percent_difference_below_the_step_is_seen() -> None:
    typical = helper()["aka_near_median_mean"]
    rng = random.Random(3)
    ratios = [
        typical(event_times(0.0121 * 1.01, 100, rng)) / typical(event_times(0.0121, 100, rng))
        for _ in range(20)
    ]
    assert statistics.median(ratios) == pytest.approx(1.01, abs=0.003)


def test_runs_far_from_the_median_are_dropped() -> None:
    typical = helper()["aka_near_median_mean"]
    assert typical([0.012] * 90 + [0.5] * 10) == pytest.approx(0.012)
    assert typical([0.02]) == 0.02 and typical([0.010, 0.011]) == pytest.approx(0.0105)
    # Sub-microsecond kernels keep both neighbouring steps (the window is at least 1 us).
    assert typical([0.0005] * 6 + [0.001] * 4) == pytest.approx(0.0007)


def test_aka_time_ms_reports_the_middle_mean_of_its_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    ns = helper()
    # Each run on the CPU reads perf_counter twice; feed it runs of known length.
    # The timed runs (the warm-up runs are not timed).
    lengths = iter([0.001] * 4 + [0.0012] * 2 + [0.002] * 2 + [0.009] * 2)
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
    # Runs of 1 (four), 1.2 (two), 2 and 9 ms (two each): median 1.1, those within
    # 0.55 of it kept.
    assert ms == pytest.approx((4 * 1 + 2 * 1.2) / 6)


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
    assert report[0]["execution_time_ms"] == pytest.approx((5 * 0.010 + 3 * 0.011) / 8)
