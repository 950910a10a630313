"""Unit tests of the timing detectors on the parent's side: the speed of light, the
parent's clock, side streams, a baseline slowed or spread beside the candidate and its
settling against the clean timing, and the noise band of the aggregate."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aka.eval._detect import (
    SPEEDUP_CAP,
    SPEEDUP_FLOOR,
    against_clean,
    aggregate_speedups,
    baseline_slowed,
    baseline_window,
    ceilings_for,
    implausible_speed,
    settle_slowed,
    side_stream,
    timing_inconsistent,
)


def _item(base_s: float, cand_s: float, n: int = 5, ci: tuple[float, float] | None = None):
    speed = base_s / cand_s
    return {
        "shape": {"N": 1},
        "pair": {
            "baseline": {"median_s": base_s, "samples_s": [base_s] * n},
            "candidate": {"median_s": cand_s, "samples_s": [cand_s] * n},
            "speedup": speed,
            "speedup_ci": list(ci or (speed * 0.9, speed * 1.1)),
            "host_check": {"applicable": False},
        },
    }


def test_implausible_speed_fires_only_below_the_speed_of_light() -> None:
    cuda = ceilings_for("cuda")
    work = [{"bytes": 4.3e9, "flops": 0.0}]  # 1 ms at 4.3 TB/s
    assert implausible_speed([_item(2e-3, 0.5e-3)], work, cuda)
    assert implausible_speed([_item(2e-3, 1.2e-3)], work, cuda) == []
    assert implausible_speed([_item(2e-3, 1e-9)], [None], cuda) == []


def test_timing_inconsistent_when_samples_exceed_the_parent_window() -> None:
    item = _item(0.1, 0.1, n=10)  # 2 s of samples
    assert timing_inconsistent([item], [1.0])
    assert timing_inconsistent([item], [2.5]) == []
    assert timing_inconsistent([item], [None])


def _arm(median: float, half: float) -> dict[str, float]:
    return {"median_s": median, "ci_low_s": median - half, "ci_high_s": median + half}


def _timed(base: dict[str, float], shape: int = 1) -> dict[str, Any]:
    return {"shape": {"N": shape}, "dtype": "float32",
            "pair": {"baseline": base, "candidate": _arm(1e-5, 1e-7)}}  # fmt: skip


def test_baseline_slowed_beyond_the_slack_at_its_median_or_spread_beyond_noise() -> None:
    clean = [_timed(_arm(1e-3, 2e-5)) | {"pair": {"baseline": _arm(1e-3, 2e-5),
                                                   "candidate": _arm(1.01e-3, 3e-5)}}]  # fmt: skip
    (found,) = baseline_slowed([_timed(_arm(1.5e-3, 1e-5))], clean, 0.25)  # 1.5 > 1.25 x 1.01
    assert found[0] == 0 and found[1] is clean[0]["pair"] and "1500 us" in found[2]
    assert baseline_slowed([_timed(_arm(1.2e-3, 1e-5))], clean, 0.25) == []  # within the slack
    assert baseline_slowed([_timed(_arm(1.26e-3, 1e-5))], clean, 0.25) == []  # 1.26 < 1.2625
    # Two calls in three slowed: the median moved though the interval reaches down to a
    # clean call; the speedup is taken from the median.
    (bimodal,) = baseline_slowed([_timed(_arm(1.5e-3, 4e-4))], clean, 0.25)
    assert "1500 us beside the candidate" in bimodal[2]
    # Two in five slowed: the median stays, the interval widens (clean: 6 % at most).
    (spread,) = baseline_slowed([_timed(_arm(1e-3, 2e-4))], clean, 0.25)
    assert "spanned 40% of its median" in spread[2] and "6% in a process" in spread[2]
    assert baseline_slowed([_timed(_arm(1e-3, 4e-5))], clean, 0.25) == []  # 8 % < the 10 % floor
    assert baseline_slowed([_timed(_arm(0.5e-3, 1e-5))], clean, 0.25) == []  # faster: fine
    assert baseline_slowed([_timed(_arm(9e-3, 1e-5), shape=2)], clean, 0.25) == []  # unmeasured


def test_a_baseline_spread_in_one_process_only_is_not_scored_by_its_interval() -> None:
    """A first pair whose baseline arm was widened (a slower kernel's interval stretched
    to hold 1, which the noise band scores as 1) and a second, clean one: the first pair
    counts only against the clean baseline, so its wide interval scores nothing."""
    clean = {"baseline": _arm(1e-3, 1e-5), "candidate": _arm(1e-3, 1e-5)}
    wide = _timed(_arm(1e-3, 4e-4))
    wide["pair"] |= {"candidate": _arm(2e-3, 2e-5), "speedup": 0.5, "speedup_ci": [0.3, 1.4]}
    quiet = _timed(_arm(1e-3, 1e-5))
    quiet["pair"] |= {"candidate": _arm(2e-3, 2e-5), "speedup": 0.51, "speedup_ci": [0.5, 0.52]}
    found = [(0, clean, "shape {'N': 1}: the baseline's interval spanned 80%")]
    (kept,), (note,) = settle_slowed([wide], [quiet], found, 0.25)
    assert note.startswith("baseline_noise:")
    assert kept["pair"]["speedup"] == pytest.approx(0.5)
    assert kept["pair"]["speedup_ci"][1] < 1.0  # not the noise band: a slower kernel scores as one


def test_a_slowed_baseline_is_replaced_by_its_clean_timing() -> None:
    slowed = _timed(_arm(5e-3, 1e-5))["pair"] | {"speedup": 500.0, "speedup_ci": [450.0, 550.0]}
    pair = against_clean(slowed, {"baseline": _arm(1e-3, 1e-5), "candidate": _arm(1e-3, 1e-5)})
    assert pair["speedup"] == pytest.approx(100.0)  # 1 ms alone over the candidate's 10 us
    lo, hi = pair["speedup_ci"]
    assert lo == pytest.approx(0.99e-3 / 1.01e-5) and hi == pytest.approx(1.01e-3 / 0.99e-5)
    assert pair["baseline"]["median_s"] == 1e-3 and pair["baseline_beside"]["median_s"] == 5e-3
    assert pair["significant"] and pair["verdict"] == "faster"


def test_a_baseline_slowed_in_one_process_only_is_settled_by_a_second_timing() -> None:
    """Noise that slowed both arms of one process keeps an interleaved pair (the lower of
    two), never the slowed candidate against a quiet baseline; a baseline slowed again is
    replaced by the clean one, and so is one whose second timing failed."""
    clean = {"baseline": _arm(1e-3, 1e-5), "candidate": _arm(1e-3, 1e-5)}
    busy = _timed(_arm(2.4e-3, 1e-5))
    busy["pair"] = {"baseline": _arm(2.4e-3, 1e-5), "candidate": _arm(2.4e-3, 1e-5),
                    "speedup": 1.0}  # fmt: skip
    quiet = _timed(_arm(1e-3, 1e-5))
    quiet["pair"] |= {"candidate": _arm(1.02e-3, 1e-5), "speedup": 0.98}
    found = [(0, clean, "shape {'N': 1}: the baseline took 2400 us")]

    (kept,), (note,) = settle_slowed([busy], [quiet], found, 0.5)
    assert kept["pair"] is quiet["pair"] and note.startswith("baseline_noise:")
    quiet["pair"]["speedup"] = 1.3  # the second pair is faster: the first one stands
    (kept,), _ = settle_slowed([busy], [quiet], found, 0.5)
    assert kept["pair"] is busy["pair"]

    again = _timed(_arm(2.4e-3, 1e-5))  # slowed in the second process too
    for second in ([again], []):
        (kept,), (note,) = settle_slowed([busy], second, found, 0.5)
        assert kept["pair"]["baseline_beside"]["median_s"] == 2.4e-3
        assert kept["pair"]["speedup"] == pytest.approx(1e-3 / 2.4e-3)
        assert note.startswith("baseline_slowed: ") and "taken against the latter" in note


def test_a_kept_clean_timing_is_measured_again_before_it_changes_a_score() -> None:
    """A stale clean timing (a quieter moment) never decides on its own."""
    from aka.eval import _baseline_ref

    key = f"test-{id(object())}"
    slow, fast = [_timed(_arm(2e-3, 1e-5))], [_timed(_arm(1e-3, 1e-5))]
    measured: list[str] = []

    def measure(timing: list[dict[str, Any]]) -> Any:
        return lambda: measured.append("m") or timing

    def detect(t: Any, clean: Any) -> list[Any]:
        return baseline_slowed(t, clean, 0.25)

    here = [_timed(_arm(2e-3, 1e-5))]  # the baseline beside a candidate
    assert _baseline_ref.slowed(key, here, measure(fast), detect)  # first: measured, found
    assert _baseline_ref.slowed(key, here, measure(slow), detect) == []  # kept said so; fresh not
    assert measured == ["m", "m"]
    assert _baseline_ref.slowed(key, here, measure(fast), detect) == []  # the slow one was kept
    assert measured == ["m", "m"]  # and nothing was found, so nothing measured again
    # No clean timing came back: None, for the caller to fail closed on, first or again.
    assert _baseline_ref.slowed(f"{key}-x", here, lambda: [], detect) is None
    assert _baseline_ref.slowed(f"{key}-y", here, measure(fast), detect)
    assert _baseline_ref.slowed(f"{key}-y", here, lambda: [], detect) is None


def test_side_stream_reads_the_candidate_host_check() -> None:
    item = _item(1e-4, 1e-5)
    item["pair"]["host_check"] = {
        "applicable": True,
        "candidate": {"suspect": True, "excess_s": 9e-5, "event_median_s": 1e-5},
        "baseline": {"suspect": False},
    }
    assert side_stream([item])
    item["pair"]["host_check"]["candidate"]["suspect"] = False
    assert side_stream([item]) == []


@given(
    st.lists(
        st.tuples(st.floats(1e-4, 1e4), st.floats(0.5, 2.0), st.floats(0.5, 2.0)),
        min_size=1,
        max_size=8,
    )
)
def test_aggregate_noise_band_floor_and_cap(rows) -> None:
    items = []
    for speed, a, b in rows:
        lo, hi = sorted((speed * a, speed * b))
        items.append({"pair": {"speedup": speed, "speedup_ci": [lo, hi]}})
    out, noise = aggregate_speedups(items)
    assert len(out) == len(items)
    assert all(SPEEDUP_FLOOR <= s <= SPEEDUP_CAP for s in out)
    in_band = [i["pair"]["speedup_ci"][0] <= 1.0 <= i["pair"]["speedup_ci"][1] for i in items]
    assert noise == sum(in_band)
    for s, band, item in zip(out, in_band, items, strict=True):
        if band:
            assert s == 1.0
        else:
            assert s == min(max(item["pair"]["speedup"], SPEEDUP_FLOOR), SPEEDUP_CAP)


def test_operators_the_baseline_runs_beside_the_candidate_but_never_alone_are_named() -> None:
    shape = {"M": 4, "N": 96}
    alone = [{"shape": shape, "dtype": "float32", "baseline_ops": ["aten::empty_like@k.py:1"]}]
    same = [
        {"shape": shape, "dtype": "float32", "baseline_ops": ["aten::empty_like@k.py:9:f:2:ab"]}
    ]
    assert baseline_window(same, alone) == []  # a site's path may differ: its op not
    more = [
        {
            "shape": shape,
            "dtype": "float32",
            "baseline_ops": ["aten::empty_like", "aten::softmax@r.py:3", "aten::randn"],
        }
    ]
    (found,) = baseline_window(more, alone)
    assert "aten::randn, aten::softmax ran in the baseline's calls" in found, found
    assert "{'M': 4, 'N': 96} float32" in found
    assert baseline_window([{**more[0], "baseline_ops": []}], []) == []
