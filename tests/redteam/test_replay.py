"""A cache keyed on repeated inputs is a suspicion first, settled by a second timing.

The timing pool's fresh rounds differ from its pooled ones in more than their values (the
set is generated just before the call), so on a busy machine an honest kernel's few fresh
calls can all land slow. A suspicion is therefore timed again in a fresh process: a cache
is one there too; noise is not, and the lower of the two speedups is kept.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from redteam_corpus import CORPUS, force_first_suspicion, scale_job

from aka.eval import _replay
from aka.eval._pipeline import run_job

POOL = {"target_rel_ci": 0.05, "max_time_s": 0.4, "min_samples": 40, "fresh_max_s": 0.0}
TAGS = [1, 0, 0, 0] * 8


def _raw(cand: list[float], shape: int = 8) -> dict[str, Any]:
    return {"shape": {"N": shape}, "dtype": "float32",
            "raw": {"windows": [[1e-3] * len(cand), cand], "fresh": TAGS[: len(cand)]}}  # fmt: skip


def _pair(speedup: float) -> dict[str, Any]:
    return {"shape": {"N": 8}, "dtype": "float32", "pair": {"speedup": speedup}}


# The shape of a busy CPU's coincidence: ~23 us on pooled sets, nearly every fresh call ~125 us.
NOISY = [125e-6 if t else 23e-6 for t in TAGS]
CLEAN = [24e-6 if t else 23e-6 for t in TAGS]
CACHE = [1e-3 if t else 5e-5 for t in TAGS]


def test_a_suspicion_timed_clean_again_keeps_the_lower_speedup() -> None:
    found = _replay.suspects([_raw(NOISY)])
    assert [k for k, _ in found] == [0] and "not seen" in found[0][1]
    first = [_raw(NOISY)]
    timing, evidence, notes = _replay.settle([_pair(9.0)], found, first, [_raw(CLEAN)],
                                             [_pair(7.5)], 1.5)  # fmt: skip
    assert evidence == [] and timing[0]["pair"]["speedup"] == 7.5
    (note,) = notes
    assert note.startswith("replay_noise:") and "(7.5) is kept" in note
    timing, _, _ = _replay.settle([_pair(7.0)], found, first, [_raw(CLEAN)], [_pair(7.5)], 1.5)
    assert timing[0]["pair"]["speedup"] == 7.0  # the first was lower: it stays


def test_a_suspicion_seen_again_or_not_timed_again_stands() -> None:
    found = _replay.suspects([_raw(CACHE)])
    timing, evidence, notes = _replay.settle(
        [_pair(20.0)], found, [_raw(CACHE)], [_raw(CACHE)], [_pair(19.0)], 1.5
    )
    (both,) = evidence
    assert both.count("on sets it had not seen") == 2 and "timed again in a fresh process" in both
    assert notes == [] and timing[0]["pair"]["speedup"] == 20.0
    (alone,) = _replay.settle([_pair(20.0)], found, [_raw(CACHE)], [], [], 1.5)[1]
    assert alone.endswith("it could not be timed again to rule out noise")
    # A second timing of other shapes only does not clear this one.
    other = [_raw(CLEAN, shape=16)], [{**_pair(7.5), "shape": {"N": 16}}]
    assert _replay.settle([_pair(20.0)], found, [_raw(CACHE)], *other, 1.5)[1]


def test_a_second_timing_too_short_to_tell_scores_the_speed_on_new_sets() -> None:
    """A cache fast enough to meet its interval in a handful of rounds leaves the second
    timing with too few calls of one kind to judge: that clears nothing, and the shape is
    scored at the first timing's speed on the sets it had never seen."""
    found = _replay.suspects([_raw(CACHE)])
    short = _raw(CACHE[:5])  # one new-set call among five
    pair = {"speedup": 20.0, "speedup_ci": [18.0, 22.0]}
    timing, evidence, notes = _replay.settle(
        [{**_pair(20.0), "pair": pair}], found, [_raw(CACHE)], [short],
        [{**_pair(20.0), "pair": dict(pair)}], 1.5,
    )  # fmt: skip
    assert evidence == []
    (note,) = notes
    assert note.startswith("replay_unsettled:") and "too few calls" in note
    # all calls' median 50 us, new sets' 1 ms: a twentieth of the speedup is left
    assert timing[0]["pair"]["speedup"] == pytest.approx(1.0)
    assert timing[0]["pair"]["speedup_ci"] == pytest.approx([0.9, 1.1])


def test_noise_in_one_timing_does_not_fail_an_honest_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An honest kernel whose first timing reads as a cache (the suspicion forced here, as
    a busy machine makes it now and then) is timed again, stays correct, and says so."""
    calls = force_first_suspicion(monkeypatch)
    job, root = scale_job(tmp_path, (CORPUS / "honest_vectorized.py").read_text())
    v = run_job(dataclasses.replace(job, timing=POOL), root)
    assert v.correct and v.flags == [], (v.flags, v.error)
    assert len(calls) == 2, calls  # the first timing's items, then the second's
    assert any(n.startswith("replay_noise: shape {'N': 65536}: forced") for n in v.notes), v.notes
    assert v.timing and float(v.timing[0]["pair"]["speedup"]) > 1.0


def test_a_cache_is_suspected_however_it_pads_the_pool_rounds() -> None:
    """Honest calls hit the machine's hiccups on both kinds of round, so some new-set calls
    run at the pool's speed: not suspected, however many are slow. A cache slowing a third
    of its pool calls on purpose, to look alike, is: none of its new-set calls is fast."""
    honest = [125e-6 if (t and i) or i in (11, 22) else 23e-6 for i, t in enumerate(TAGS)]
    assert sum(w > 100e-6 for w, t in zip(honest, TAGS, strict=True) if t) == 7  # 7 of 8 slow
    assert _replay.suspects([_raw(honest)]) == []
    padded = [1e-3 if t else (1e-3 if i % 3 == 0 else 5e-5) for i, t in enumerate(TAGS)]
    assert _replay.suspects([_raw(padded)])


def test_input_replay_needs_new_sets_much_slower_than_repeated_ones() -> None:
    """A cache of outputs is fast on the pool's repeated sets only; an honest kernel's
    speed does not depend on having seen its inputs, noise or not."""

    def raw(cand: list[float], fresh: list[int] | None) -> list[dict[str, Any]]:
        f: dict[str, Any] = {"windows": [[1e-3] * len(cand), cand]}
        if fresh is not None:
            f["fresh"] = fresh
        return [{"shape": {"N": 8}, "dtype": "float32", "raw": f}]

    tags = [1, 0, 0, 0] * 6
    cache = [1e-3 if t else 5e-5 for t in tags]
    (evidence,) = _replay.input_replay(raw(cache, tags))
    assert "not seen" in evidence and "6 calls" in evidence
    noisy = [(1.3 if i % 2 else 0.8) * 1e-4 for i in range(len(tags))]  # 1.6x spread, mixed
    assert _replay.input_replay(raw(noisy, tags)) == []
    assert _replay.input_replay(raw([1.4e-4 if t else 1e-4 for t in tags], tags)) == []  # 1.4x
    assert _replay.input_replay(raw(cache[:8], tags[:8])) == []  # two new sets: too few to say
    assert _replay.input_replay(raw(cache, None)) == []  # fresh values every call: no pool
    assert _replay.input_replay(raw(cache, tags[:-1])) == []  # tags that do not match the samples
    # On the GPU the bar is higher: an honest kernel ran 2.06x slower on fresh sets there.
    honest_h200 = [150.6e-6 if t else 73.09e-6 for t in tags]
    assert _replay.input_replay(raw(honest_h200, tags)) and not _replay.input_replay(
        raw(honest_h200, tags), 4.0
    )
    assert _replay.input_replay(raw(cache, tags), 4.0)  # a 20x cache is one on any device
