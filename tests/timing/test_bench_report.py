"""The benchmark's arithmetic on synthetic records, and its CPU plumbing end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from aka.timing._bench_report import aa_deviation, aggregate, render_markdown


def _rec(
    kernel: str, speedup: float, median_s: float, *, comparators: bool = True, lo=None, hi=None
):
    lo = speedup * 0.99 if lo is None else lo
    hi = speedup * 1.01 if hi is None else hi
    r = {
        "kernel": kernel,
        "speedup": speedup,
        "ci": [lo, hi],
        "ci_sampling": [lo, hi],
        "significant": lo > 1.0 or hi < 1.0,
        "median_s": median_s,
        "n": 50,
        "rel_ci": 0.004,
        "timer": "cuda_graph",
        "stop": "converged",
        "wall_s": 0.2,
        "overhead_s": 0.1,
        "throttled": False,
        "host_suspect": False,
        "resolution_s": 32e-9,
    }
    if comparators:
        r |= {
            "do_bench": 1.1,
            "kernelbench": 1 / 1.2,
            "do_bench_a_s": 8e-6,
            "kernelbench_a_s": 9e-6,
        }
    return r


def test_aa_deviation_is_symmetric():
    assert aa_deviation(1.25) == pytest.approx(aa_deviation(0.8)) == pytest.approx(1.25)


def test_aggregate_computes_p95_shares_and_pass_marks():
    short = [
        _rec("short", 1.0 + k / 1000, 5e-6, comparators=k % 2 == 0, lo=0.98, hi=1.03)
        for k in range(20)
    ]
    long_ = [_rec("long", 1.02, 1e-3, lo=1.015, hi=1.025) for _ in range(20)]
    sens = [{"kernel": "long", "speedup": 0.9, "ci": [0.89, 0.91], "work": 1.1}] * 19
    sens += [{"kernel": "long", "speedup": 0.99, "ci": [0.97, 1.01], "work": 1.1}]
    rep = aggregate([{"aa": short + long_, "sens": sens, "rounds_done": 20, "fingerprint": {}}], {})
    rows = {k["kernel"]: k for k in rep["kernels"]}
    assert rows["short"]["bar_p95"] == 1.03 and rows["short"]["pass"] is True
    assert rows["short"]["engine_p95_aa"] == pytest.approx(1.01805)
    assert rows["short"]["do_bench_pairs"] == 10
    assert rows["short"]["kernelbench_p95_aa"] == pytest.approx(1.2)
    assert rows["long"]["bar_p95"] == 1.01 and rows["long"]["pass"] is False
    assert rows["long"]["engine_share_ci_excluding_1"] == 1.0
    assert rep["checks"]["share_ci_excluding_1"] == pytest.approx(0.5)
    assert rep["checks"]["share_ci_excluding_1_ok"] is False
    assert rep["sensitivity"][0]["detected_share"] == pytest.approx(0.95)
    assert rep["checks"]["sensitivity_ok"] is True
    text = render_markdown(rep)
    assert "| short |" in text and "95%" in text


def test_kernels_between_the_bands_have_no_bar():
    rep = aggregate(
        [{"aa": [_rec("mid", 1.0, 25e-6)], "sens": [], "rounds_done": 1, "fingerprint": {}}], {}
    )
    assert rep["kernels"][0]["bar_p95"] is None and rep["kernels"][0]["pass"] is None
    assert rep["checks"]["sensitivity_ok"] is False  # no sensitivity trials is not a pass


def test_cpu_bench_runs_end_to_end(tmp_path):
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "aka.timing.bench", "--device", "cpu", "--processes", "1"]
    cmd += ["--rounds", "1", "--max-time-s", "0.2", "--format", "json", "--output", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
    rep = json.loads(proc.stdout)
    assert {k["kernel"] for k in rep["kernels"]} == {"sort_2k_f64", "sort_20k_f64"}
    assert rep["sensitivity"][0]["trials"] == 1
    assert json.loads(out.read_text()) == rep
    assert json.loads(out.with_suffix(".raw.json").read_text())[0]["rounds_done"] == 1
