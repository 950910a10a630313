"""Claim order: longest first, by a per-task duration estimate from the ledger's history.

Greedy claiming is list scheduling; taking the longest attempts first (Graham's LPT rule)
keeps the last worker from starting a long attempt while the others sit idle, which is
what stretches a run past ``max(longest, total / workers)`` (``aka bench schedule``
measures the gap). An attempt's own duration is unknown before it runs, so the estimate
is the median of the task's finished tries, in any run of the ledger.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

__all__ = ["longest_first", "task_estimates"]


def task_estimates(envelopes: Iterable[Any]) -> dict[str, float]:
    """Median seconds from ``AttemptStarted`` to ``AttemptFinished`` per task.

    Args:
        envelopes: ledger envelopes (``run_id``, ``attempt_key``, ``type``, ``time``,
            ``payload``); only ``AttemptPlanned``, ``AttemptStarted`` and
            ``AttemptFinished`` are read, so callers may pass just those types.
    """
    task_of: dict[tuple[str, str], str] = {}
    started: dict[tuple[str, str, int], datetime] = {}
    seconds: dict[str, list[float]] = defaultdict(list)
    finished: list[tuple[tuple[str, str, int], datetime]] = []
    for env in envelopes:
        key = (env.run_id, env.attempt_key)
        if env.type == "AttemptPlanned":
            task_of[key] = env.payload.task
        elif env.type == "AttemptStarted":
            started[(*key, env.payload.try_no)] = env.time
        elif env.type == "AttemptFinished":
            finished.append(((*key, env.payload.try_no), env.time))
    for (run_id, attempt_key, try_no), end in finished:
        begin = started.get((run_id, attempt_key, try_no))
        task = task_of.get((run_id, attempt_key))
        if begin is not None and task is not None:
            seconds[task].append(max(0.0, (end - begin).total_seconds()))
    return {task: statistics.median(v) for task, v in seconds.items()}


def longest_first(plans: Sequence[Any], estimates: Mapping[str, float]) -> list[Any]:
    """Plans with unknown tasks first (they may be long), then by estimate, descending.

    The sort is stable, so attempts of one task keep their planned order, which
    interleaves the arms of a task (drift then hits every arm alike).
    """
    return sorted(
        plans,
        key=lambda p: (p.task in estimates, -estimates.get(p.task, 0.0)),
    )
