"""A small event vocabulary for the ledger's tests, and hypothesis strategies for it.

The ledger knows no event types; these stand in for an application's: flat and nested
fields, optional values, digests (so ``verify`` follows references) and one type at
schema version 2 with an upcaster from version 1.
"""

from __future__ import annotations

from typing import Any, Literal

from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from aka_ledger import EventModel, EventRegistry

REGISTRY = EventRegistry()


@REGISTRY.register
class Opened(EventModel):
    """A run was opened."""

    type: Literal["Opened"] = "Opened"
    name: str
    """Human name of the run."""
    tags: tuple[str, ...] = ()
    """Free-form labels."""


@REGISTRY.register
class Stored(EventModel):
    """An artifact was stored."""

    type: Literal["Stored"] = "Stored"
    digest: str = Field(pattern=r"^b3:[0-9a-f]{64}$")
    """The artifact's content digest."""
    note: str | None = None
    """Optional remark."""


class Sample(BaseModel):
    """One measurement sample (a nested model)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: float
    """Measured value."""
    unit: str
    """Its unit."""


@REGISTRY.register
class Measured(EventModel):
    """Samples were measured."""

    type: Literal["Measured"] = "Measured"
    samples: tuple[Sample, ...]
    """The samples, in order."""
    meta: dict[str, int] = Field(default_factory=dict)
    """Counters."""
    ok: bool = True
    """Whether the measurement passed its checks."""


@REGISTRY.register
class Renamed(EventModel):
    """A run was renamed (version 2: ``old`` became ``previous``)."""

    schema_version = 2
    type: Literal["Renamed"] = "Renamed"
    previous: str
    """The former name."""
    name: str
    """The new name."""


@REGISTRY.upcaster("Renamed", 1)
def _renamed_v1(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    data["previous"] = data.pop("old")
    data.setdefault("name", data["previous"])  # version 1 had no separate new name
    return data


@REGISTRY.register
class Counted(EventModel):
    """A counter ticked (used by fold tests)."""

    type: Literal["Counted"] = "Counted"
    key: str
    """Which counter."""
    by: int
    """Increment."""


text = st.text(max_size=20)
digests = st.binary(max_size=64).map(lambda b: "b3:" + __import__("blake3").blake3(b).hexdigest())
finite = st.floats(allow_nan=False, allow_infinity=False)

EVENTS = st.one_of(
    st.builds(Opened, name=text, tags=st.lists(text, max_size=3).map(tuple)),
    st.builds(Stored, digest=digests, note=st.none() | text),
    st.builds(
        Measured,
        samples=st.lists(st.builds(Sample, value=finite, unit=text), max_size=3).map(tuple),
        meta=st.dictionaries(text, st.integers(-(2**53), 2**53), max_size=3),
        ok=st.booleans(),
    ),
    st.builds(Renamed, previous=text, name=text),
    st.builds(Counted, key=st.sampled_from("abc"), by=st.integers(-100, 100)),
)
RUN_IDS = st.sampled_from(["run-a", "run-b", "run-c"])
ATTEMPTS = st.none() | st.sampled_from(["a0", "a1"])
ITEMS = st.lists(st.tuples(EVENTS, RUN_IDS, ATTEMPTS), max_size=20)


def fold(envelopes: list[Any]) -> dict[str, int]:
    """A pure fold: counter totals by run and key (order-sensitive keys check ordering)."""
    state: dict[str, int] = {}
    for env in envelopes:
        if isinstance(env.payload, Counted):
            k = f"{env.run_id}/{env.payload.key}"
            state[k] = state.get(k, 0) * 2 + env.payload.by
    return state
