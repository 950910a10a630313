"""One scorer behind every trainer adapter: response text in, a recorded reward out.

:func:`score_response` reads the response (:mod:`aka.integrations._response`), sends the
candidate to an :class:`aka.api.Evaluator` (or records why there is none) and returns a
:class:`Reward` with the feedback text. Every call is an attempt of the evaluator's
service run, with the trainer's sample (step, index, prompt, message) recorded, so
``aka report`` / ``aka export rewards`` list every reward a trainer saw.

Where it runs is configuration (:func:`open_scorer`): in this process (an
:class:`aka.api.Evaluator` on a ledger) or in an ``aka serve`` process
(``POST /reward``), so a trainer on another machine of the node needs no task folder
and no torch. A trainer's batch (TRL's completions of a step, verl's batch reward
manager) goes through :meth:`Scorer.score_batch`: up to the evaluator's in-flight limit
of responses are scored at once (:mod:`aka.inflight`), the rewards come back in order.
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, get_args

from aka.errors import InputError

if TYPE_CHECKING:
    from aka.api import Evaluator, Sample
    from aka.config import TimingSettings

__all__ = [
    "ENV_DEVICE",
    "ENV_LEDGER",
    "ENV_TASKS",
    "ENV_URL",
    "LocalScorer",
    "Reward",
    "Scorer",
    "Submission",
    "close_shared",
    "open_scorer",
    "score_response",
    "score_responses",
    "shared_scorer",
    "timing_settings",
]

ENV_URL = "AKA_SERVE_URL"
"""An ``aka serve`` address (``http://127.0.0.1:8765``): score there instead of in-process."""
ENV_LEDGER = "AKA_LEDGER"
"""The ledger folder of the in-process evaluator."""
ENV_TASKS = "AKA_TASKS_ROOT"
"""The tasks folder of the in-process evaluator (default ``tasks``)."""
ENV_DEVICE = "AKA_DEVICE"
"""The device of the in-process evaluator (default ``auto``)."""


@dataclass(frozen=True)
class Reward:
    """A trainer's reward for one response, and where it is recorded.

    Attributes:
        score: the reward (the evaluator's score under its policy).
        compiled, correct, speedup: the components a trainer logs.
        error: why it failed (a parse error, a compile error, a failing case), or None.
        feedback: text for a multi-turn policy's next turn.
        form: how the response was read (``fenced``, ``diff``, ``bare``), None if it was not.
        run_id, attempt_key, eval_id: the ledger records (``eval_id`` empty when nothing
            was evaluated).
    """

    score: float
    compiled: bool
    correct: bool
    speedup: float | None
    error: str | None
    feedback: str
    form: str | None
    run_id: str
    attempt_key: str
    eval_id: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (what ``POST /reward`` returns)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reward:
        """Back from :meth:`to_dict` (unknown keys are an error)."""
        return cls(**data)

    def metrics(self) -> dict[str, float]:
        """The numeric components, as trainers log extra reward info."""
        return {
            "compiled": float(self.compiled),
            "correct": float(self.correct),
            "speedup": float(self.speedup or 0.0),
            "parsed": float(self.form is not None),
        }


@dataclass(frozen=True)
class Submission:
    """One response of a trainer's batch, as :meth:`Scorer.score` takes it."""

    task: str
    response: str
    sample: Sample
    task_digest: str | None = None


class Scorer(Protocol):
    """Scores responses for tasks; :class:`LocalScorer` or :class:`HttpScorer`."""

    def score(
        self, task: str, response: str, sample: Sample, *, task_digest: str | None = None
    ) -> Reward:
        """Score ``response`` as a candidate for ``task`` (sample: an ``aka.api.Sample``)."""
        ...

    def score_batch(self, batch: Sequence[Submission]) -> list[Reward]:
        """Score a trainer's batch, several at once; one reward per submission, in order."""
        ...

    def close(self) -> None:
        """Release the evaluator (closes the ledger the scorer opened)."""
        ...


def score_response(
    evaluator: Evaluator,
    task: str,
    response: str,
    sample: Sample,
    *,
    task_digest: str | None = None,
) -> Reward:
    """Parse ``response`` for ``task``, evaluate it (or record why not) and return the reward.

    Args:
        evaluator: an :class:`aka.api.Evaluator`.
        task: the task key.
        response: the model's message.
        sample: the :class:`aka.api.Sample` recorded with the attempt (its message is
            the response when it has none).
        task_digest: the task digest the prompt was made from (a dataset's
            ``extra_info.task_digest``); a different task folder now is an error, so a
            reward always belongs to the task the policy was shown.

    Raises:
        InputError: unknown task, or a task folder that changed since the prompt.
    """
    from aka.feedback import rejection_text
    from aka.integrations._response import ResponseError, parse_response

    if not sample.message:  # a sample sent without the text: the response is the message
        sample = sample.model_copy(update={"message": response})
    spec = evaluator.task(task)
    if task_digest and task_digest != evaluator.task_digest(task):
        raise InputError(
            f"task {task} is not the one the prompt was made from "
            f"({evaluator.task_digest(task)} now, {task_digest} in the dataset)",
            where="extra_info.task_digest",
            fix="export the dataset again from this tasks folder (`aka export prompts`)",
        )
    src = spec.path / spec.spec.source_dir
    sources = {rel: (src / rel).read_text(errors="replace") for rel in spec.spec.editable}
    try:
        cand = parse_response(response, editable=spec.spec.editable, sources=sources)
    except ResponseError as exc:
        error = exc.render()
        r = evaluator.reject(task, error, sample=sample)
        return Reward(
            score=r.reward,
            compiled=False,
            correct=False,
            speedup=None,
            error=error,
            feedback=rejection_text(error),
            form=None,
            run_id=r.run_id,
            attempt_key=r.attempt_key,
            eval_id="",
        )
    r = evaluator.evaluate(task, dict(cand.files), sample=sample)
    return Reward(
        score=r.reward,
        compiled=r.compiled,
        correct=r.correct,
        speedup=r.speedup,
        error=r.error,
        feedback=r.feedback,
        form=cand.form,
        run_id=r.run_id,
        attempt_key=r.attempt_key,
        eval_id=r.eval_id,
    )


def score_responses(
    evaluator: Evaluator, batch: Sequence[Submission], *, in_flight: int | None = None
) -> list[Reward]:
    """:func:`score_response` for each submission, up to ``in_flight`` at once, in order.

    ``in_flight`` defaults to the evaluator's limit; every submission is read, evaluated
    (or rejected) and recorded as an attempt of its own, as one at a time. With a limit of
    1 the batch is scored in turn, its attempts recorded in input order.

    Raises:
        Exception: the first failure in input order (see :func:`aka.inflight.in_order`),
            once every other submission was scored and recorded.
    """
    from aka.inflight import in_order

    def one(sub: Submission) -> Reward:
        return score_response(
            evaluator, sub.task, sub.response, sub.sample, task_digest=sub.task_digest
        )

    return in_order(one, batch, in_flight or evaluator.in_flight)


class LocalScorer:
    """Scores in this process with an :class:`aka.api.Evaluator` (candidates still run in
    processes of their own; a batch runs up to the evaluator's in-flight limit at once)."""

    def __init__(self, evaluator: Evaluator):
        self.evaluator = evaluator

    def score(
        self, task: str, response: str, sample: Sample, *, task_digest: str | None = None
    ) -> Reward:
        """See :func:`score_response`."""
        return score_response(self.evaluator, task, response, sample, task_digest=task_digest)

    def score_batch(self, batch: Sequence[Submission]) -> list[Reward]:
        """See :func:`score_responses`."""
        return score_responses(self.evaluator, batch)

    def close(self) -> None:
        """Close the evaluator (and the ledger if it opened it)."""
        self.evaluator.close()


def open_scorer(
    *,
    url: str | None = None,
    ledger: str | Path | None = None,
    tasks_root: str | Path | None = None,
    device: str | None = None,
    policy: str = "agentkernelarena",
    label: str = "trainer",
    in_flight: int | None = None,
    timing: TimingSettings | Mapping[str, Any] | None = None,
    where: str = "open_scorer",
) -> Scorer:
    """A scorer from arguments, falling back to the environment.

    ``url`` (or ``AKA_SERVE_URL``) picks an ``aka serve`` process; otherwise an
    in-process evaluator on ``ledger`` (or ``AKA_LEDGER``) with ``tasks_root`` (or
    ``AKA_TASKS_ROOT``, default ``tasks``) and ``device`` (or ``AKA_DEVICE``, default
    ``auto``). ``in_flight`` (or ``AKA_IN_FLIGHT``) is how many of a batch are scored at
    once (:mod:`aka.inflight`; for a server, how many requests are sent at once).

    ``timing`` is the in-process evaluator's timing budget (:func:`timing_settings`;
    default :class:`aka.config.TimingSettings`); with a server it is checked against the
    server's (``GET /health``), since the server times every request with its own. Each candidate holds its device alone
    while it is timed, so the per-shape budget bounds how many new samples a device
    scores per minute; a trainer sets a short one. ``where`` names the caller's config
    section in errors (``custom_reward_function.reward_kwargs``, ``env_config``).

    Raises:
        InputError: neither a URL nor a ledger is given, a bad in-flight limit, a bad
            timing setting, or a timing setting other than the server's (an ``aka
            serve`` process times with its own: ``--max-time-s`` and the like).
    """
    url = url or os.environ.get(ENV_URL)
    if url:
        from aka.integrations._http import HttpScorer

        wanted = timing_settings(timing, where=f"{where}.timing")
        server = HttpScorer(url, in_flight=in_flight)
        if wanted is not None:  # the server times; a trainer's budget must be the server's
            server.require_timing(wanted, where=f"{where}.timing")
        return server
    budget = timing_settings(timing, where=f"{where}.timing")
    folder = ledger or os.environ.get(ENV_LEDGER)
    if not folder:
        raise InputError(
            "no ledger to record rewards in",
            where="aka.integrations",
            fix=f"set {ENV_LEDGER}=DIR (or pass ledger=), or {ENV_URL}=http://HOST:PORT of `aka serve`",
        )
    from aka.api import Evaluator

    return LocalScorer(
        Evaluator(
            folder,
            tasks_root=tasks_root or os.environ.get(ENV_TASKS, "tasks"),
            device=device or os.environ.get(ENV_DEVICE, "auto"),
            policy=policy,
            label=label,
            in_flight=in_flight,
            timing=budget,
        )
    )


def timing_settings(value: object, *, where: str) -> TimingSettings | None:
    """A trainer's ``timing`` setting as the evaluator takes it, or None for its default.

    ``value`` is a :class:`aka.config.TimingSettings`, or a mapping of its keys as a
    trainer config gives it (a dict, an OmegaConf ``DictConfig``; numbers written as
    strings are read as numbers). It is checked when the scorer opens, so a bad budget
    stops the trainer before its first step rather than failing every reward.

    Raises:
        InputError: not a mapping, an unknown key, or a value out of range; ``where`` (the
            setting's place in the trainer's config) plus the key names the field, and
            the fix says what the field takes.
    """
    from pydantic import ValidationError

    from aka.config import TimingSettings

    if value is None or isinstance(value, TimingSettings):
        return value
    keys = ", ".join(TimingSettings.model_fields)
    if not isinstance(value, Mapping):
        raise InputError(
            f"expected a mapping of timing settings, got {value!r}",
            where=where,
            fix=f"give a mapping of {keys}, e.g. {{max_time_s: 0.2, min_samples: 5}}",
        )
    try:
        return TimingSettings.model_validate(dict(value))
    except ValidationError as exc:
        errors = exc.errors()
    fields = [".".join(str(p) for p in e["loc"]) for e in errors]
    said = [
        "unknown key" if e["type"] == "extra_forbidden" else f"{e['msg']} (got {e['input']!r})"
        for e in errors
    ]
    if len(said) > 1:  # ``where`` names the first field; the message names each
        said = [f"{field}: {text}" for field, text in zip(fields, said, strict=True)]
    fixes = dict.fromkeys(
        f"{field}: {_takes(field)}"
        if field in TimingSettings.model_fields
        else f"remove {field}: the timing keys are {keys}"
        for field in fields
    )
    raise InputError(
        "; ".join(said),
        where=f"{where}.{fields[0]}",
        fix="; ".join(fixes) + " (docs/trainers.md#the-timing-budget)",
    )


_KINDS: dict[object, str] = {float: "a number", int: "an integer"}


def _takes(name: str) -> str:
    """What a :class:`aka.config.TimingSettings` field takes, from the model itself (its
    type, bounds and description), so the fix never drifts from what is validated."""
    from aka.config import TimingSettings

    info = TimingSettings.model_fields[name]
    union = get_args(info.annotation) if isinstance(info.annotation, types.UnionType) else ()
    kinds = [k for k in union or (info.annotation,) if k is not type(None)]
    what = " or ".join(_KINDS.get(k, str(k)) for k in kinds)
    bounds = [
        f"{op} {getattr(m, attr)}"
        for m in info.metadata
        for attr, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))
        if getattr(m, attr, None) is not None
    ]
    if bounds:
        what += " " + " and ".join(bounds)
    if type(None) in union:
        what += ", or null"
    return f"{what} ({info.description})" if info.description else what


SETTINGS = ("tasks_root", "device", "ledger", "url", "policy", "in_flight", "timing")
"""What a trainer config may set for aka (verl ``reward_kwargs``, SkyRL ``env_config``)."""
_shared: dict[tuple[Any, ...], Scorer] = {}
_shared_lock = threading.Lock()


def shared_scorer(settings: dict[str, Any], *, label: str, where: str) -> Scorer:
    """One scorer per process and settings, for trainers that call plain functions.

    verl calls a module function and SkyRL builds an environment per episode; both must
    not open a ledger (and start evaluator processes) per call. Settings that differ
    (a timing budget among them) get scorers of their own.

    Raises:
        InputError: a setting other than :data:`SETTINGS` (``where`` names the config
            section), or what :func:`open_scorer` raises.
    """
    unknown = sorted(k for k, v in settings.items() if k not in SETTINGS and v is not None)
    if unknown:
        raise InputError(
            f"unknown settings {unknown}", where=where, fix=f"use only {list(SETTINGS)}"
        )
    timing = timing_settings(settings.get("timing"), where=f"{where}.timing")
    # A mapping is not hashable: the key holds the validated settings' JSON, so equal
    # budgets written differently ("0.2" or 0.2) share a scorer.
    key = (
        label,
        *(settings.get(k) for k in SETTINGS if k != "timing"),
        timing.model_dump_json() if timing is not None else None,
    )
    with _shared_lock:
        if key not in _shared:
            opts = {
                k: settings[k] for k in ("tasks_root", "device", "ledger", "url") if settings.get(k)
            }
            _shared[key] = open_scorer(
                **opts,
                policy=settings.get("policy") or "agentkernelarena",
                label=label,
                in_flight=_limit(settings.get("in_flight"), where),
                timing=timing,
                where=where,
            )
        return _shared[key]


def _limit(value: Any, where: str) -> int | None:
    """An ``in_flight`` setting from a trainer config (YAML may give it as a string)."""
    from aka.inflight import resolve

    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return resolve(value, where=f"{where}.in_flight")


def close_shared() -> None:
    """Close every shared scorer (the next call opens a fresh one)."""
    with _shared_lock:
        for scorer in _shared.values():
            scorer.close()
        _shared.clear()
