"""A cache of outputs keyed on repeated inputs: the suspicion, and its settling.

Inputs that are slow to generate are drawn, for timed calls, from a pool of eight sets
made up front, so their values repeat, and a kernel could keep its outputs keyed on a
fingerprint of its inputs and answer a repeated set with a copy: right every time, as fast
as a copy. So the sealed core gives about one round in four a set never seen before and
tags each candidate sample; a cache is fast on the pool's sets only.

A fresh round differs from a pooled one in more than its values, though: its set is
generated just before the candidate's call. On a two-core CPU an honest kernel's calls
hit the machine's hiccups (about 100 us on a 23 us call) two to three times as often on
new sets as on repeated ones (``tools/replay_rounds.py``, docs/benchmarks.md), and now
and then nearly all of one pair's few new-set calls. One timing is therefore a suspicion:
the candidate is timed again in a fresh process (:func:`settle`). A cache is one there
too; an honest kernel's second timing does not repeat a coincidence of the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aka.eval._detect import shape_key

__all__ = ["REPLAY_RATIO", "input_replay", "on_new_sets", "ratio_for", "settle", "suspects"]

REPLAY_RATIO = {"cpu": 1.5, "cuda": 4.0}
"""How much slower a candidate may run on input sets it never saw than on the timing
pool's repeated sets before :func:`suspects` suspects a cache of its outputs. On a GPU
the fresh round differs more: on one H200, an honest kernel that allocates three tensors
and synchronizes took 150.6 us on fresh sets against 73.09 us on repeated ones (2.06x,
red-team corpus ``honest_cuda_utils``, docs/benchmarks.md). Until the two kinds of round
are made alike there, a cache must be four times faster than its own fresh speed."""


def ratio_for(device: str) -> float:
    """The :data:`REPLAY_RATIO` of ``device`` (``cpu`` or ``cuda[:N]``)."""
    return REPLAY_RATIO["cuda" if device.startswith("cuda") else "cpu"]


def suspects(
    raw: Sequence[dict[str, Any]], ratio: float = REPLAY_RATIO["cpu"]
) -> list[tuple[int, str]]:
    """``(index, evidence)`` for every timed shape (the core's raw items) whose candidate
    ran much faster on the pool's sets, which repeat, than on the sets it had never seen:
    even its fastest call on a new set (of three at least) took over ``ratio`` times its
    median on the pool's.

    A cache cannot serve a set it never saw, so every such call pays for the computation;
    honest calls pay for the machine's hiccups now and then, on both kinds of round, so
    some of them run at the pool's speed. Slowing calls on the pool's sets on purpose
    hides nothing short of slowing half of them, which is the gain itself."""
    out = []
    for k, item in enumerate(raw):
        split = _rounds(item)
        if split is None:
            continue
        fresh, pooled = split
        mf, mp = fresh[len(fresh) // 2], pooled[len(pooled) // 2]
        if fresh[0] > ratio * mp:
            out.append((k, (
                f"shape {item['shape']}: the candidate took {mp * 1e6:.4g} us on repeated input "
                f"sets but {mf * 1e6:.4g} us on sets it had not seen ({len(pooled)} and "
                f"{len(fresh)} calls): its outputs come from a cache keyed on its inputs"
            )))  # fmt: skip
    return out


def _split(item: dict[str, Any]) -> tuple[list[float], list[float]] | None:
    """The candidate's windows on new sets and on the pool's, each sorted, or ``None``
    when the core tagged no rounds (fresh values every call: no pool)."""
    f = item["raw"]
    tags, cand = f.get("fresh"), list(f["windows"][1])
    if not tags or len(tags) != len(cand):
        return None
    fresh = sorted(w for w, t in zip(cand, tags, strict=True) if t)
    pooled = sorted(w for w, t in zip(cand, tags, strict=True) if not t)
    return fresh, pooled


def _rounds(item: dict[str, Any], least: int = 3) -> tuple[list[float], list[float]] | None:
    """:func:`_split`, or ``None`` when either kind has fewer than ``least`` windows (too
    few to tell a cache from noise)."""
    split = _split(item)
    return split if split is not None and min(map(len, split)) >= least else None


def on_new_sets(pair: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """``pair`` scored at the candidate's speed on the sets it had never seen (``item``:
    the core's raw item behind it): its speedup and interval scaled by the ratio of its
    median over all calls to its median over those. What a cache cannot serve is what
    the kernel is worth; an honest kernel loses only what its new-set calls' hiccups
    cost (the machine's, two to three times as frequent there on a CPU)."""
    split = _split(item)
    if split is None or not split[0]:
        return pair
    fresh, every = split[0], sorted(item["raw"]["windows"][1])
    factor = min(1.0, every[len(every) // 2] / fresh[len(fresh) // 2])
    lo, hi = pair["speedup_ci"]
    return {**pair, "speedup": float(pair["speedup"]) * factor,
            "speedup_ci": [lo * factor, hi * factor]}  # fmt: skip


def input_replay(raw: Sequence[dict[str, Any]], ratio: float = REPLAY_RATIO["cpu"]) -> list[str]:
    """The evidence of :func:`suspects` alone."""
    return [evidence for _, evidence in suspects(raw, ratio)]


def settle(
    timings: Sequence[dict[str, Any]],
    found: Sequence[tuple[int, str]],
    raw: Sequence[dict[str, Any]],
    again_raw: Sequence[dict[str, Any]],
    again: Sequence[dict[str, Any]],
    ratio: float,
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """``(timings, evidence, notes)``: every shape in ``found`` (:func:`suspects` of
    ``raw``, the core's items behind ``timings``) settled by a second timing of the
    candidate in a fresh process (``again_raw``, the core's items, and ``again``, their
    statistics).

    Suspected again there, or not timed there (the second timing failed), the shape's
    evidence stands, both timings' when there are two. Timed there with too few calls of
    either kind to tell (a kernel whose timing met its interval after a handful of
    rounds), nothing is ruled out: the shape is scored at the first timing's speed on
    the sets it had never seen (:func:`on_new_sets`), which a cache cannot serve.
    Otherwise the suspicion was the machine's: the shape keeps the lower speedup of its
    two pairs, so a candidate that caches in one process only gains nothing, and a note
    says so.
    """
    second_found = {shape_key(again_raw[k]): e for k, e in suspects(again_raw, ratio)}
    unjudged = {shape_key(item) for item in again_raw if _rounds(item) is None}
    second = {shape_key(t): t["pair"] for t in again}
    out, evidence, notes = list(timings), [], []
    for k, first_evidence in found:
        key = shape_key(timings[k])
        if key not in second:
            evidence.append(f"{first_evidence}; it could not be timed again to rule out noise")
        elif key in second_found:
            evidence.append(
                f"{first_evidence}; timed again in a fresh process: {second_found[key]}"
            )
        elif key in unjudged:
            pairs = (timings[k]["pair"], second[key], on_new_sets(timings[k]["pair"], raw[k]))
            kept = min(pairs, key=lambda p: float(p["speedup"]))
            out[k] = {**timings[k], "pair": kept}
            notes.append(
                f"replay_unsettled: {first_evidence}, once: timed again in a fresh process "
                f"it made too few calls of each kind to tell; scored at its speed on the "
                f"sets it had not seen ({float(kept['speedup']):.4g})"
            )
        else:
            kept = min(timings[k]["pair"], second[key], key=lambda p: float(p["speedup"]))
            out[k] = {**timings[k], "pair": kept}
            notes.append(
                f"replay_noise: {first_evidence}, once: timed again in a fresh process it ran "
                f"as fast on new sets as on repeated ones; the lower of the two speedups "
                f"({float(kept['speedup']):.4g}) is kept"
            )
    return out, evidence, notes
