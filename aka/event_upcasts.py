"""How old events are read: one function per event type and old version.

An event is never rewritten once stored (docs/ledger.md); when a model's fields change,
its ``schema_version`` goes up and an upcaster here turns a payload of the old version
into the next one as it is read. :mod:`aka.events` registers every entry of
:data:`UPCASTERS` in its registry. Kept apart from the models so the vocabulary reads
as what is written today, and this module as the history of how it changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


def scored_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Name the version 1 policy a version 1 score was made with.

    Version 1 scoring had no hack rule of its own (a flagged candidate counted as
    wrong), hence ``zero_on_hack`` false; its parameters were the defaults.
    """
    spec = {
        "name": data["policy"],
        "version": data.get("policy_version", 1),
        "floor": 0.5,
        "cap": None,
        "thresholds": [1.0],
        "zero_on_hack": False,
    }
    return {**data, "policy_spec": json.dumps(spec, sort_keys=True)}


def run_started_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Runs started before high-water marks recorded none."""
    return {**data, "writers": {}}


def attempt_finished_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 only widened the statuses; a version 1 payload is valid as it is."""
    return data


UPCASTERS: dict[tuple[str, int], Upcaster] = {
    ("Scored", 1): scored_v1,
    ("RunStarted", 1): run_started_v1,
    ("AttemptFinished", 1): attempt_finished_v1,
}
"""(event type, the version a payload was written at) -> the upcaster to the next version."""
