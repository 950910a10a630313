"""Parent-side detectors: checks made outside the candidate's process, from what it sent.

Pure functions over the child's timing results and the parent's own clock, so each is
unit-testable without a GPU:

- :func:`implausible_speed`: faster than the memory/compute speed of light computed from
  the reference's ``work(shape, dtype)`` (bytes, flops) and the device's ceilings;
- :func:`timing_inconsistent`: the samples the child reports add up to more time than
  the parent saw pass (a patched clock inflating the baseline or a forged result);
- :func:`side_stream`: the engine's host-clock cross-check says work escaped the timed
  events (side streams);
- :func:`baseline_slowed`: the baseline, timed beside the candidate in its process, ran
  slower than the same baseline timed in a process where no candidate code ever ran
  (:func:`against_clean` then scores the candidate against the latter);
- :func:`aggregate_speedups`: per-shape speedups for scoring, with the A/A noise band
  (a CI that holds 1 counts as exactly 1) and per-shape floors and caps, so neither
  harvesting noise on tiny kernels nor one extreme shape moves the aggregate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Upper bounds no kernel can beat: H200 device-to-device copy ~4.3 TB/s and dense bf16
# ~790 TFLOP/s (docs/timing.md, FIELD notes). For the CPU, generous bounds that no
# CPU reaches (1 TB/s, 10 TFLOP/s), so only impossible timings fire.
CEILINGS: dict[str, dict[str, float]] = {
    "cuda": {"bytes_per_s": 4.3e12, "flops_per_s": 790e12},
    "cpu": {"bytes_per_s": 1e12, "flops_per_s": 1e13},
}
SOL_SLACK = 0.9  # flag below 90 % of the speed-of-light time (work estimates are rough)
# How much slower than in a clean process the baseline may run beside the candidate
# (its interval wholly above the clean medians) before the candidate is timed again to
# settle it (settle_slowed): what a candidate can gain by slowing the baseline. Looser
# on the CPU, where CI machines time two evaluations on two cores at once; a false alarm
# costs one more timing process and keeps the lower of two honest speedups.
BASELINE_SLACK: dict[str, float] = {"cuda": 0.10, "cpu": 0.25}
# How much wider than in a clean process the baseline's interval may be beside the
# candidate (relative to its median: SPREAD_FACTOR times the clean one, and at least the
# device's floor) before it is settled the same way. A candidate that slows some of the
# baseline's calls only (two in five) leaves its median alone but widens the interval
# until the speedup's holds 1, which scores a slower kernel as neutral. Looser on the
# CPU, where a few samples of an interpreted kernel span a quarter of their median now
# and then with nothing slowed.
SPREAD_FACTOR = 3.0
BASELINE_SPREAD: dict[str, float] = {"cuda": 0.10, "cpu": 0.25}
SPEEDUP_FLOOR = 0.01
SPEEDUP_CAP = 100.0


def ceilings_for(device: str) -> dict[str, float]:
    """The ceilings of ``device`` (``cpu`` or ``cuda[:N]``)."""
    return CEILINGS["cpu" if device == "cpu" else "cuda"]


def implausible_speed(
    timings: Sequence[dict[str, Any]],
    work: Sequence[dict[str, float] | None],
    ceilings: dict[str, float],
) -> list[str]:
    """Evidence for every shape whose candidate median beats the speed of light."""
    out = []
    for item, w in zip(timings, work, strict=False):
        if not w:
            continue
        t_mem = w.get("bytes", 0.0) / ceilings["bytes_per_s"]
        t_flop = w.get("flops", 0.0) / ceilings["flops_per_s"]
        floor = max(t_mem, t_flop)
        cand = float(item["pair"]["candidate"]["median_s"])
        if floor > 0 and cand < SOL_SLACK * floor:
            out.append(
                f"shape {item['shape']}: candidate median {cand * 1e6:.3g} us is below the "
                f"speed of light {floor * 1e6:.3g} us ({w.get('bytes', 0):.3g} B at "
                f"{ceilings['bytes_per_s']:.3g} B/s, {w.get('flops', 0):.3g} flop at "
                f"{ceilings['flops_per_s']:.3g} flop/s)"
            )
    return out


def timing_inconsistent(
    timings: Sequence[dict[str, Any]], windows: Sequence[float | None]
) -> list[str]:
    """Evidence for every shape whose reported samples exceed the parent-observed window."""
    out = []
    for k, item in enumerate(timings):
        wall = windows[k] if k < len(windows) else None
        if wall is None:
            out.append(f"shape {item['shape']}: no timing window was observed by the parent")
            continue
        pair = item["pair"]
        total = sum(pair["baseline"]["samples_s"]) + sum(pair["candidate"]["samples_s"])
        if total > 1.05 * wall + 2e-3:
            out.append(
                f"shape {item['shape']}: samples add up to {total:.4g} s but only {wall:.4g} s "
                "passed on the parent's clock"
            )
    return out


def side_stream(timings: Sequence[dict[str, Any]]) -> list[str]:
    """Evidence for shapes where the candidate's host time exceeds its event time."""
    out = []
    for item in timings:
        host = item["pair"].get("host_check") or {}
        cand = host.get("candidate") or {}
        if host.get("applicable") and cand.get("suspect"):
            out.append(
                f"shape {item['shape']}: host time exceeds event time by "
                f"{cand.get('excess_s', 0.0) * 1e6:.3g} us (event median "
                f"{cand.get('event_median_s', 0.0) * 1e6:.3g} us): work escaped the timed stream"
            )
    return out


def shape_key(item: dict[str, Any]) -> tuple[str, str]:
    """What names one timed shape across timings: its shape (sorted items) and dtype."""
    return repr(sorted(dict(item["shape"]).items())), str(item["dtype"])


def baseline_window(
    timings: Sequence[dict[str, Any]], clean: Sequence[dict[str, Any]]
) -> list[str]:
    """Evidence, per timed shape, of operators that the baseline's calls ran beside the
    candidate and never run in a process of their own (``clean``, the same shapes timed
    where no candidate code is).

    What a baseline call runs is let go (task code around a kernel calls the library in
    both arms alike), but the sealed core still records what it would charge a candidate
    call for: work a candidate had done inside the baseline's window (its next inputs
    drawn and their answers computed there, so that its own timed calls are copies, by
    whatever hook got it there) shows up as operators the baseline does not run. Compared
    by operator name, wherever the call came from: a site's path differs between the two
    processes (the baseline's own files are the candidate's in the clean one).
    """
    alone = {_op_name(o) for item in clean for o in item.get("baseline_ops") or []}
    found = []
    for item in timings:
        extra = sorted({_op_name(o) for o in item.get("baseline_ops") or []} - alone)
        if extra:
            found.append(f"shape {dict(item['shape'])} {item['dtype']}: {', '.join(extra[:8])} ran "
                         "in the baseline's calls beside the candidate, never alone")  # fmt: skip
    return found


def _op_name(charged: str) -> str:
    """The operator of a charge: a plain name, or a site's ``op@file:line:...``."""
    return charged.split("@", 1)[0]


def baseline_slowed(
    timings: Sequence[dict[str, Any]],
    clean: Sequence[dict[str, Any]],
    slack: float,
    spread: float = BASELINE_SPREAD["cuda"],
) -> list[tuple[int, dict[str, Any], str]]:
    """``(index, clean pair, evidence)`` for every shape whose baseline ran slower, or far
    less steadily, beside the candidate than in a process without it.

    The baseline is timed in the candidate's process, interleaved with it, and whatever
    runs there can reach it: its module's globals, the library functions it calls, the
    code objects; a kernel can also leave the machine slower for the call after it (an
    interpreter's caches). Either way the speedup would be measured against a slowed
    baseline. ``clean`` holds the same baseline timed against itself in a process where
    no candidate code ran (the same core, shapes and settings). A shape is reported when
    its baseline median lies above ``1 + slack`` times the clean medians (the statistic
    the speedup is taken from: slowing most calls moves it even where the interval still
    reaches down, as it does when a third run clean), or when its interval is wider than
    :data:`SPREAD_FACTOR` and the floor ``spread`` allow (slowing a few calls widens it
    until the speedup's interval holds 1, and the noise band scores the shape as 1).
    """
    ref = {shape_key(c): c["pair"] for c in clean}
    out = []
    for k, item in enumerate(timings):
        alone = ref.get(shape_key(item))
        why = _disturbed(item["pair"], alone, slack, spread) if alone is not None else None
        if alone is not None and why is not None:
            out.append((k, alone, f"shape {item['shape']}: {why}"))
    return out


def _top(alone: dict[str, Any]) -> float:
    """The clean pair's slower median (both of its arms are the baseline)."""
    return float(max(alone["baseline"]["median_s"], alone["candidate"]["median_s"]))


def _spread(arm: dict[str, Any]) -> float:
    """An arm's interval width relative to its median."""
    median = float(arm["median_s"])
    return (float(arm["ci_high_s"]) - float(arm["ci_low_s"])) / median if median > 0 else 0.0


def _disturbed(
    pair: dict[str, Any], alone: dict[str, Any], slack: float, spread: float
) -> str | None:
    """How ``pair``'s baseline arm differs from the clean pair ``alone`` (both of whose
    arms are the baseline) beyond what noise explains, or ``None``."""
    here = pair["baseline"]
    if here["median_s"] > (1.0 + slack) * _top(alone):
        return (f"the baseline took {here['median_s'] * 1e6:.4g} us beside the candidate but "
                f"{alone['baseline']['median_s'] * 1e6:.4g} us in a process without candidate "
                "code")  # fmt: skip
    clean = max(_spread(alone["baseline"]), _spread(alone["candidate"]))
    if _spread(here) > max(SPREAD_FACTOR * clean, spread):
        return (f"the baseline's interval spanned {_spread(here):.0%} of its median beside the "
                f"candidate but {clean:.0%} in a process without candidate code")  # fmt: skip
    return None


def settle_slowed(
    timings: Sequence[dict[str, Any]],
    again: Sequence[dict[str, Any]],
    found: Sequence[tuple[int, dict[str, Any], str]],
    slack: float,
    spread: float = BASELINE_SPREAD["cuda"],
) -> tuple[list[dict[str, Any]], list[str]]:
    """``timings`` with every shape in ``found`` (from :func:`baseline_slowed`) settled by
    ``again``, the candidate timed once more in a fresh process, and a note for each.

    A machine busy for a moment slows both arms of one process alike: the pair stays
    honest, but its baseline looks slowed beside the clean one, and scoring the slowed
    candidate against the clean baseline would punish noise. A candidate that slows the
    baseline does it again. So a shape whose baseline is slowed in ``again`` too is scored
    against the clean timing (:func:`against_clean`); one whose baseline ran clean there
    keeps the lower speedup of its two pairs, which both interleaved the arms: a candidate
    that slows the baseline in one process only gains nothing either way. A shape missing
    from ``again`` (the second timing failed) is scored against the clean timing.
    """
    fresh = {shape_key(t): t["pair"] for t in again}
    out = list(timings)
    notes = []
    for k, alone, evidence in found:
        first, second = timings[k]["pair"], fresh.get(shape_key(timings[k]))
        if second is None or _disturbed(second, alone, slack, spread) is not None:
            out[k] = {**timings[k], "pair": against_clean(first, alone)}
            notes.append(f"baseline_slowed: {evidence}; the speedup is taken against the latter")
            continue
        if first["baseline"]["median_s"] <= (1.0 + slack) * _top(alone):
            first = against_clean(first, alone)  # its spread alone was off: not its interval
        kept = min(first, second, key=lambda p: float(p["speedup"]))
        out[k] = {**timings[k], "pair": kept}
        notes.append(
            f"baseline_noise: {evidence}, once: timed again its baseline ran as in that "
            f"process; the lower of the two speedups ({float(kept['speedup']):.4g}) is kept"
        )
    return out, notes


def against_clean(pair: dict[str, Any], clean: dict[str, Any]) -> dict[str, Any]:
    """``pair`` with its baseline arm replaced by the clean timing's, and its speedup
    and interval recomputed from it; the arm it had is kept as ``baseline_beside``.

    Slowing the baseline thus earns nothing by itself: the candidate is scored against
    the baseline as it runs alone, up to the slack. That is a correction, not a hack flag,
    because an honest kernel can slow the call after it too. Work the candidate moves
    into the baseline's window (a library function the baseline calls, rebound to do
    the candidate's next calls' work, corpus ``s46``) would still make its own arm look
    fast; that rebinding is ``library_patched`` (:mod:`aka.eval._libstate`).
    """
    base, cand = clean["baseline"], pair["candidate"]
    lo = base["ci_low_s"] / cand["ci_high_s"] if cand["ci_high_s"] > 0 else 0.0
    hi = base["ci_high_s"] / cand["ci_low_s"] if cand["ci_low_s"] > 0 else float("inf")
    significant = lo > 1.0 or hi < 1.0
    return {
        **pair,
        "baseline": base,
        "baseline_beside": pair["baseline"],
        "speedup": base["median_s"] / cand["median_s"],
        "speedup_ci": [lo, hi],
        "speedup_ci_sampling": [lo, hi],
        "significant": significant,
        "verdict": ("faster" if lo > 1.0 else "slower") if significant else "same",
    }


def aggregate_speedups(timings: Sequence[dict[str, Any]]) -> tuple[list[float], int]:
    """Per-shape speedups for scoring and how many fell in the noise band.

    A shape whose speedup CI holds 1 counts as exactly 1 (no reward or penalty from
    noise); every shape is clipped to ``[SPEEDUP_FLOOR, SPEEDUP_CAP]``.
    """
    out, noise = [], 0
    for item in timings:
        pair = item["pair"]
        lo, hi = pair["speedup_ci"]
        s = float(pair["speedup"])
        if lo <= 1.0 <= hi:
            s, noise = 1.0, noise + 1
        out.append(min(max(s, SPEEDUP_FLOOR), SPEEDUP_CAP))
    return out, noise
