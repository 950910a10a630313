"""The baseline timed where no candidate code runs, once per task and device.

The timing engine interleaves baseline and candidate calls in one process, so that drift
(clocks, temperature, other tenants) cancels out of the speedup. That process runs the
candidate's code, which can reach the baseline there (its module's globals, the library
functions it calls, its code object) and slow it down: a correct kernel then gets a
forged speedup, and no detector of the candidate's own timing sees anything wrong.

So the evaluator also times the baseline against itself in a process whose "candidate"
is the baseline (no candidate code is ever imported there), with the same core, shapes
and timing settings, and :func:`aka.eval._detect.baseline_slowed` compares each timed
shape's baseline with it; a shape whose baseline ran slower beside the candidate is
scored against the clean timing instead. That clean timing is kept for the evaluator's
lifetime, keyed by what it depends on (the baseline's and reference's bytes, shapes,
dtypes, device, settings), and measured again before it ever changes a score, so a
timing kept from another moment (a cooler GPU, a busier machine) never decides alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from aka.eval._once import Once

__all__ = ["clean_key", "slowed"]

T = TypeVar("T")

_cache: Once[list[dict[str, Any]]] = Once()


def clean_key(root: Path, files: list[Path], *parts: Any) -> str:
    """What a clean timing depends on: the names under ``root`` and bytes of ``files``, and
    the plain values ``parts``.

    Names are taken relative to the evaluation's folder, never whole: each evaluation gets
    a folder of its own, so a key holding it would never be found again and every
    candidate would pay (and hold the device for) a clean timing of its own.
    """
    h = hashlib.blake2b(json.dumps(parts, sort_keys=True, default=str).encode(), digest_size=16)
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(f.read_bytes() if f.is_file() else b"")
    return h.hexdigest()


def slowed(
    key: str,
    timings: list[dict[str, Any]],
    measure: Callable[[], list[dict[str, Any]]],
    detect: Callable[[list[dict[str, Any]], list[dict[str, Any]]], list[T]],
) -> list[T] | None:
    """``detect``'s findings against the clean timing of ``key`` (``measure`` makes one),
    or ``None`` when no clean timing came back to judge by.

    Findings against a kept timing are checked again against a fresh one, and the fresh
    one's findings are returned (and it is kept). ``None`` is for the caller to fail
    closed on: a candidate that can make the clean timing fail (break what its process
    needs, outlast its time) must not thereby switch the check of its baseline off.
    """
    measured: list[bool] = []

    def first() -> list[dict[str, Any]] | None:
        measured.append(True)
        return measure() or None

    kept = _cache.get(key, first)
    if kept is None:
        return None
    found = detect(timings, kept)
    if not found or measured:
        return found
    fresh = measure()
    if not fresh:
        return None
    _cache.put(key, fresh)
    return detect(timings, fresh)
