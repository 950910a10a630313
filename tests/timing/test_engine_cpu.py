"""measure_pair on CPU with Python callables: the whole engine except real GPU speed."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from aka.errors import InputError
from aka.timing import PairTiming, TimingConfig, device_fingerprint, measure_pair


def _work(n: int):
    def f(i: int) -> int:
        s = 0
        for k in range(n):
            s += k ^ i
        return s

    return f


FAST = TimingConfig(max_time_s=3.0, min_samples=30)


def _sleep(seconds: float):
    # Sleeping callables keep their time on a loaded 2-core CI machine, where busy
    # loops get preempted half the time; the engine treats both alike.
    return lambda i: time.sleep(seconds)


def test_a_ten_percent_slower_candidate_is_reported_slower():
    pair = measure_pair(_sleep(2e-3), _sleep(2.2e-3), config=FAST)
    assert pair.verdict == "slower"
    assert pair.speedup_ci[1] < 1.0
    assert 0.85 < pair.speedup < 0.95


def test_a_faster_candidate_is_reported_faster():
    pair = measure_pair(_sleep(2.2e-3), _sleep(2e-3), config=FAST)
    assert pair.verdict == "faster"
    assert pair.speedup_ci[0] > 1.0


def test_busy_loops_with_more_work_measure_slower():
    # CPU-bound work under contention: the point estimate, not the CI, is asserted.
    pair = measure_pair(_work(20_000), _work(30_000), config=FAST)
    assert pair.speedup < 0.95


def test_result_is_consistent_and_json_able():
    seen: list[int] = []

    def base(i: int) -> None:
        seen.append(i)
        _work(2_000)(i)

    pair = measure_pair(base, _work(2_000), config=FAST, n_input_sets=3)
    assert isinstance(pair, PairTiming)
    assert set(seen) == {0, 1, 2}  # input sets rotate
    b, c = pair.baseline, pair.candidate
    assert b.n == c.n == pair.n_rounds == len(b.samples_s)
    assert b.median_s == pytest.approx(float(np.median(b.samples_s)))
    assert b.ci_low_s <= b.median_s <= b.ci_high_s
    assert pair.speedup == pytest.approx(b.median_s / c.median_s)
    assert pair.speedup_ci[0] <= pair.speedup <= pair.speedup_ci[1]
    s_lo, s_hi = pair.speedup_ci_sampling
    assert pair.speedup_ci[0] <= s_lo and s_hi <= pair.speedup_ci[1]
    assert pair.stop_reason in {"converged", "time_budget", "max_samples"}
    assert pair.timer == "perf_counter" and pair.flush_bytes == 0
    assert "interleaved" in pair.method and "aka.timing/" in pair.method
    assert pair.overhead_s >= 0.0 and pair.wall_s >= sum(b.samples_s)
    d = json.loads(json.dumps(pair.to_dict()))
    assert d["baseline"]["samples_s"] == list(b.samples_s)
    assert d["config"]["seed"] == 0


def test_interleaving_alternates_the_arms_within_each_round():
    calls: list[str] = []
    cfg = TimingConfig(min_samples=10, max_samples=10, warmup=0)
    measure_pair(lambda i: calls.append("a"), lambda i: calls.append("b"), config=cfg)
    rounds = [calls[k : k + 2] for k in range(0, len(calls), 2)]
    assert len(rounds) == 10 and all(sorted(r) == ["a", "b"] for r in rounds)
    assert sum(r[0] == "a" for r in rounds) == 5


def test_time_budget_and_sample_cap_stop_the_loop():
    cfg = TimingConfig(max_time_s=0.05, min_samples=5, target_rel_ci=1e-6)
    pair = measure_pair(_work(5_000), _work(5_000), config=cfg)
    assert pair.stop_reason == "time_budget" and pair.n_rounds >= 5
    cfg = TimingConfig(min_samples=5, max_samples=7, target_rel_ci=1e-6)
    pair = measure_pair(_work(100), _work(100), config=cfg)
    assert pair.stop_reason == "max_samples" and pair.n_rounds == 7


@pytest.mark.parametrize(
    "kwargs",
    [
        {"target_rel_ci": 0.0},
        {"min_samples": 2},
        {"max_samples": 5, "min_samples": 10},
        {"flush_factor": 1.0},
        {"level": 1.0},
        {"max_time_s": float("inf")},
    ],
)
def test_bad_config_is_an_input_error_naming_the_field(kwargs):
    with pytest.raises(InputError) as err:
        TimingConfig(**kwargs)
    assert "TimingConfig." in str(err.value)


def test_bad_device_and_input_sets_are_input_errors():
    with pytest.raises(InputError):
        measure_pair(_work(1), _work(1), device="tpu")
    with pytest.raises(InputError):
        measure_pair(_work(1), _work(1), n_input_sets=0)


def test_cpu_fingerprint_names_the_machine():
    fp = device_fingerprint("cpu")
    assert fp["device"] == "cpu" and fp["cpu_cores"] >= 1 and fp["host_cpu"]


def test_import_loads_neither_torch_nor_the_read_side():
    code = (
        "import sys, aka.timing, aka.timing.bench; "
        "bad = [m for m in ('torch', 'triton', 'duckdb', 'polars', 'pydantic') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
