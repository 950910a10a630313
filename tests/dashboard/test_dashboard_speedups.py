"""A speedup is coloured only when its interval excludes 1; a missing interval is named."""

from __future__ import annotations

import math

import pytest

from aka.dashboard._html import ci, speedup_ci


@pytest.mark.parametrize(
    ("x", "low", "high", "cls"),
    [
        (1.40, 1.10, 1.80, "good"),
        (1.40, 0.90, 2.10, "flat"),  # faster on the median, but the interval spans 1
        (0.70, 0.60, 0.80, "bad"),
        (0.95, 0.80, 1.05, "flat"),
        (1.40, None, None, "flat"),  # no interval: no claim either way
    ],
)
def test_colour_follows_the_interval_not_the_point(
    x: float, low: float | None, high: float | None, cls: str
) -> None:
    assert speedup_ci(x, low, high).startswith(f'<span class="{cls}">')


def test_a_missing_or_infinite_interval_reads_undefined() -> None:
    for low, high in ((None, None), (math.nan, 1.2), (0.9, math.inf)):
        assert "CI undefined" in ci(low, high)
    assert "[0.900, 1.100]" in ci(0.9, 1.1)
    assert "CI" not in speedup_ci(None, None, None), "a failed attempt has no speedup to qualify"


def test_a_speedup_without_an_interval_is_never_coloured() -> None:
    from aka.dashboard._html import speedup

    for x in (0.2, 1.0, 3.5):
        assert speedup(x).startswith('<span class="flat">')
