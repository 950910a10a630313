"""Several evaluations of one evaluator at once: the limit, its slots, and batches in order.

A trainer's step brings many new candidates, and each spends most of its time loading,
compiling and checking on the CPU cores while the GPU is idle. The evaluator's timing
gate (docs/eval_workers.md) lets those stages of several evaluations overlap and keeps
timing exclusive per device, so an :class:`aka.api.Evaluator` runs up to its *in-flight
limit* of evaluations at once: :class:`Slots` bounds every caller together (a batch, the
threads of ``aka serve``, a trainer's environments), and :func:`in_order` runs a batch
on threads and returns its results in input order.

The limit comes from the caller (``Evaluator(in_flight=K)``, ``aka serve --in-flight K``,
a trainer adapter's ``in_flight``), else ``AKA_IN_FLIGHT``, else :func:`default_in_flight`.
A limit of 1 is the serial evaluator: one evaluation at a time, a batch stopping at its
first failure.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from aka.errors import InputError

__all__ = [
    "DEFAULT_CAP",
    "ENV_IN_FLIGHT",
    "Devices",
    "Slots",
    "default_in_flight",
    "in_order",
    "parse_devices",
    "resolve",
    "within",
]

ENV_IN_FLIGHT = "AKA_IN_FLIGHT"
"""Evaluations one evaluator runs at once when no argument says (a positive integer)."""
DEFAULT_CAP = 8
"""Most evaluations in flight by default, however many cores: each holds a candidate
process (with its device context) and a checker, and beyond a handful the compiles
queue behind the one device's timing anyway."""

T = TypeVar("T")
R = TypeVar("R")


def default_in_flight() -> int:
    """Half the CPU cores this process may use, at least 1 and at most :data:`DEFAULT_CAP`.

    An evaluation in flight keeps about two cores busy (its candidate compiling or
    checking, its checker comparing), so half the cores keeps them all working without
    the evaluations taking turns on a core; a 2-core machine evaluates one at a time.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(DEFAULT_CAP, cores // 2))


def resolve(value: int | None, *, where: str = "in_flight") -> int:
    """The in-flight limit: ``value``, else ``AKA_IN_FLIGHT``, else :func:`default_in_flight`.

    Raises:
        InputError: a limit below 1, or an ``AKA_IN_FLIGHT`` that is not a positive
            integer (``where`` names the argument the caller took it from).
    """
    if value is None:
        raw = os.environ.get(ENV_IN_FLIGHT, "").strip()
        if not raw:
            return default_in_flight()
        if not raw.isdigit() or int(raw) < 1:
            raise InputError(
                f"{ENV_IN_FLIGHT}={raw!r} is not a positive integer",
                where=ENV_IN_FLIGHT,
                fix=f"set {ENV_IN_FLIGHT} to the evaluations to run at once (1 runs them in turn)",
            )
        return int(raw)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(
            f"in-flight limit {value!r} is not a positive integer",
            where=where,
            fix="pass the evaluations to run at once, 1 or more (1 runs them in turn)",
        )
    return value


def within(limit: int, asked: int | None) -> int:
    """A batch's in-flight count: ``limit`` (an evaluator's), or a smaller one ``asked``.

    Raises:
        InputError: ``asked`` is not a positive integer or is above ``limit``.
    """
    if asked is None:
        return limit
    k = resolve(asked, where="in_flight")
    if k > limit:
        raise InputError(
            f"in_flight={k} is above this evaluator's limit of {limit}",
            where="in_flight",
            fix=f"pass at most {limit}, or open the Evaluator with in_flight={k}",
        )
    return k


class Slots:
    """At most ``limit`` holders at once, and a way to wait until none is left.

    Attributes:
        limit: the most holders at once.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._cond = threading.Condition()
        self._busy = 0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold one slot for the ``with`` block (waits while all are held)."""
        with self._cond:
            self._cond.wait_for(lambda: self._busy < self.limit)
            self._busy += 1
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

    @property
    def busy(self) -> int:
        """How many slots are held now."""
        with self._cond:
            return self._busy

    def wait_idle(self) -> None:
        """Return once no slot is held (an evaluator closing lets its evaluations finish)."""
        with self._cond:
            self._cond.wait_for(lambda: self._busy == 0)


def parse_devices(spec: str, *, where: str = "device") -> list[str]:
    """The devices an evaluator spreads over: ``cuda:0,1,3`` is three GPUs, anything else
    (``cpu``, ``cuda``, ``cuda:N``) one device.

    Raises:
        InputError: a list that is not ``cuda:`` followed by distinct GPU indices.
    """
    if "," not in spec:
        return [spec]
    found = re.fullmatch(r"cuda:(\d+(?:,\d+)+)", spec.replace(" ", ""))
    indices = found.group(1).split(",") if found else []
    if not found or len(set(indices)) != len(indices):
        raise InputError(
            f"{spec!r} is not a list of GPUs",
            where=where,
            fix="write cuda: and distinct GPU indices separated by commas, e.g. cuda:0,1,2,3",
        )
    return [f"cuda:{int(i)}" for i in indices]


class Devices:
    """Several GPUs, one evaluator: each evaluation leases the device with the fewest
    evaluations on it (the lowest index among equals).

    Each device has its own timing gate (:class:`aka.eval._gate.Gate` keeps its books per
    device), so candidates time on different GPUs at the same time while each GPU times
    one at a time; compiles and checks of every evaluation overlap on the CPU cores.
    """

    def __init__(self, devices: Sequence[str]) -> None:
        if not devices:
            raise ValueError("Devices needs at least one device")
        self.devices = list(devices)
        self._lock = threading.Lock()
        self._load = dict.fromkeys(self.devices, 0)

    @contextlib.contextmanager
    def lease(self) -> Iterator[str]:
        """The least busy device, held for the ``with`` block."""
        with self._lock:
            device = min(self.devices, key=lambda d: self._load[d])
            self._load[device] += 1
        try:
            yield device
        finally:
            with self._lock:
                self._load[device] -= 1

    def load(self) -> dict[str, int]:
        """Device -> evaluations on it now."""
        with self._lock:
            return dict(self._load)


def in_order(fn: Callable[[T], R], items: Sequence[T], in_flight: int) -> list[R]:
    """``[fn(item) for item in items]``, up to ``in_flight`` calls at once.

    With ``in_flight`` 1 the calls run in turn and the first failure stops the batch (the
    serial evaluator). Otherwise every item is called even when one fails, so each gets
    its record; once all have returned, the first failure in input order is raised, with a
    note of how many others finished.

    Raises:
        Exception: the first call's failure, in input order.
    """
    if in_flight <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(in_flight, len(items)),
                            thread_name_prefix="aka-in-flight") as pool:  # fmt: skip
        futures = [pool.submit(fn, item) for item in items]
    failures = [(i, f.exception()) for i, f in enumerate(futures) if f.exception() is not None]
    if failures:
        index, exc = failures[0]
        assert exc is not None
        exc.add_note(
            f"(item {index} of a batch of {len(items)}; "
            f"{len(items) - len(failures)} other items finished and were recorded)"
        )
        raise exc
    return [f.result() for f in futures]
