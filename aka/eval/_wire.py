"""What the evaluator and its processes send each other: typed, checked on arrival.

The parent builds a :class:`CandidateRequest` or :class:`CheckerRequest`; it travels as one
JSON line on the process's stdin with a :class:`Delivery` (what the line carries besides
the request: the checker's channel key, and a prepared process's working directory and
kernel-cache variables). The process decodes it with :func:`decode`, which refuses a
missing field, an unknown one or a value of the wrong kind, so a parent and a process
that disagree on the wire (an edited field, a stale zygote) fail loudly at once instead
of a ``KeyError`` deep inside an evaluation.

Plain dataclasses and the standard library only: both processes import this before any
candidate code, and the zygote preloads it.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "CandidateReport",
    "CandidateRequest",
    "CheckerReport",
    "CheckerRequest",
    "Delivery",
    "WireError",
    "decode",
    "decode_report",
    "encode",
    "encode_report",
]

T = TypeVar("T")


class WireError(ValueError):
    """A request line that does not match the process's request type."""


@dataclass(frozen=True)
class CandidateRequest:
    """The candidate process's request: paths and the probe shape, nothing secret.

    Shapes, seeds and dtypes of the checked and timed calls go to the sealed core in the
    plan (after this line, read by the core itself); Python in that process learns only
    the first declared shape, for the required-kernel probes (tripwires), and the paths
    it hides before importing the candidate.
    """

    eval_root: str
    task_dir: str
    base_dir: str
    cand_dir: str
    out_dir: str
    reference: str
    entry_file: str
    entry_symbol: str
    pass_shape: bool
    backend: str
    device: str
    probe_shape: dict[str, int]
    probe_dtype: str
    probe_seed: int
    isolate_network: bool
    native: str
    hide: list[str]
    max_file_bytes: int
    max_memory_bytes: int | None
    contain: bool
    profile: str | None = None
    # The task's own Python files around the kernel, in both trees (the candidate may not
    # change them, in its files or in the modules loaded from them: aka.eval._taskcode).
    task_files: list[str] | None = None
    # Draw every call's inputs in a drawer process (aka.eval._drawer), not in this one.
    drawer: bool = False
    # With a drawer, time the baseline in a process of its own too (aka.eval._drawer).
    timer: bool = False


@dataclass(frozen=True)
class CheckerRequest:
    """The checker's request: the reference and the recorded outputs (with digest keys)."""

    task_dir: str
    reference: str
    out_dir: str
    pass_shape: bool
    tolerances: dict[str, dict[str, float]]
    dtypes: list[str]
    device: str
    records: list[dict[str, Any]]
    native: str
    timed_shapes: list[dict[str, int]]
    profile: str | None = None


@dataclass(frozen=True)
class Delivery:
    """What the request line carries besides the request.

    ``key``: the checker's channel key (a candidate process's key follows the line, for
    its sealed core alone). ``cwd`` and ``env``: the working directory and kernel-cache
    variables of a process started prepared, before its evaluation existed.
    """

    key: str | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CandidateReport:
    """What Python in the candidate process reports last (through the core's signed frames).

    Untrusted content: Python there shares its process with candidate code. It says
    whether the candidate imported, what the tripwires saw and how the process was
    contained; every measurement and record comes from the sealed core instead.
    """

    compiled: dict[str, Any] | None
    flags: list[dict[str, str]]
    notes: list[str]
    error: str | None
    network: str
    contained: str | None = None


@dataclass(frozen=True)
class CheckerReport:
    """The checker's verdict per record, its flags and per-shape work estimates."""

    results: list[dict[str, Any]]
    flags: list[dict[str, str]]
    work: list[dict[str, float] | None]
    error: str | None = None
    # The device's fingerprint, read here (trusted) rather than in the candidate process.
    device: dict[str, Any] = dataclasses.field(default_factory=dict)


def encode_report(report: CandidateReport | CheckerReport) -> dict[str, Any]:
    """A report as the body of a ``result`` frame."""
    return {"kind": "result", **dataclasses.asdict(report)}


def decode_report(cls: type[T], body: dict[str, Any]) -> T:
    """The report of type ``cls`` from a ``result`` frame's body; :class:`WireError` if
    it is not exactly that."""
    return _build(cls, {k: v for k, v in body.items() if k != "kind"})


def encode(request: CandidateRequest | CheckerRequest, delivery: Delivery) -> bytes:
    """One JSON line: ``{"request": ..., "delivery": ...}``."""
    body = {"request": dataclasses.asdict(request), "delivery": dataclasses.asdict(delivery)}
    return json.dumps(body).encode() + b"\n"


def decode(cls: type[T], line: bytes) -> tuple[T, Delivery]:
    """The request of type ``cls`` and its delivery, from one line; :class:`WireError` if
    the line is not exactly that."""
    try:
        body = json.loads(line)
    except ValueError as exc:
        raise WireError(f"request line is not JSON: {exc}") from None
    if not isinstance(body, dict) or set(body) != {"request", "delivery"}:
        raise WireError("request line must be an object with 'request' and 'delivery'")
    return _build(cls, body["request"]), _build(Delivery, body["delivery"])


def _build(cls: type[T], data: object) -> T:
    name = cls.__name__
    if not isinstance(data, dict):
        raise WireError(f"{name}: expected an object, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(data) - set(fields))
    missing = sorted(
        n for n, f in fields.items()
        if n not in data and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    )  # fmt: skip
    if unknown or missing:
        raise WireError(f"{name}: unknown fields {unknown}, missing fields {missing}")
    for key, value in data.items():
        if not _fits(value, hints[key]):
            raise WireError(f"{name}.{key}: {value!r} is not {hints[key]}")
    return cls(**data)


def _fits(value: object, hint: Any) -> bool:
    """Whether a JSON value fits a field's type (containers one level deep)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is Any:
        return True
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if origin is dict:
        _, item = typing.get_args(hint)
        return isinstance(value, dict) and all(
            isinstance(k, str) and _fits(v, item) for k, v in value.items()
        )
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)
