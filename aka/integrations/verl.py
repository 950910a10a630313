"""verl: a custom reward function, single and batched.

In the verl config::

    custom_reward_function:
      path: <site-packages>/aka/integrations/verl.py   # or a file that imports it
      name: compute_score          # compute_score_batch with reward_model.reward_manager=batch
      reward_kwargs:
        tasks_root: tasks
        device: cuda
        ledger: /data/aka-ledger
        timing: {max_time_s: 0.2, min_samples: 5}   # per shape: see docs/trainers.md

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info)`` for
each response (the naive manager) or ``compute_score_batch(data_sources=...,
solution_strs=..., ground_truths=..., extra_infos=...)`` (the batch manager), plus the
config's ``reward_kwargs``. The row's task comes from ``extra_info.task`` (or the
``ground_truth`` JSON) that ``aka export prompts`` writes; the task digest there must
match the tasks folder, so a reward always belongs to the task the policy was shown.

Settings not in ``reward_kwargs`` come from the environment (``AKA_LEDGER``,
``AKA_TASKS_ROOT``, ``AKA_DEVICE``, ``AKA_SERVE_URL``). verl does not pass the policy
step to reward functions; each sample is recorded with a running index and its dataset
row (``extra_info.index``). ``compute_score_batch`` scores its responses several at once
(``reward_kwargs.in_flight``, docs/trainers.md); ``reward_kwargs.timing`` is the timing
budget of each candidate (the keys of :class:`aka.config.TimingSettings`).
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from aka.api import Sample
from aka.integrations._scorer import Scorer, Submission, close_shared, shared_scorer
from aka.integrations._text import row_task

__all__ = ["compute_score", "compute_score_batch", "reset"]

_counter = itertools.count()


def _scorer(kwargs: Mapping[str, Any]) -> Scorer:
    settings = {k: v for k, v in kwargs.items() if k != "run_name"}
    return shared_scorer(settings, label="verl", where="custom_reward_function.reward_kwargs")


def reset() -> None:
    """Close every scorer this process opened (the next call opens a fresh one)."""
    close_shared()


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """Score one response; verl's custom reward function.

    Returns:
        ``score`` (the reward) and the components verl logs as extra reward info:
        ``compiled``, ``correct`` (0/1), ``speedup`` (0 unless correct), ``parsed`` (0/1:
        whether the response could be read as a candidate).

    Raises:
        InputError: no task for the row, an unknown task, a task folder that changed
            since the dataset was exported, or an unknown ``reward_kwargs`` key.
    """
    scorer = _scorer(kwargs)
    sub = _submission(data_source, solution_str, ground_truth, extra_info, kwargs)
    reward = scorer.score(sub.task, sub.response, sub.sample, task_digest=sub.task_digest)
    return {"score": reward.score, **reward.metrics()}


def _submission(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    kwargs: Mapping[str, Any],
) -> Submission:
    """One row's response with its task and sample (a running index, the dataset row)."""
    info = extra_info if isinstance(extra_info, Mapping) else {}
    task, digest = row_task(None, info, ground_truth, where=f"verl row ({data_source})")
    row = info.get("index")
    sample = Sample(
        trainer="verl",
        trainer_run=kwargs.get("run_name"),
        index=next(_counter),
        row=int(row) if isinstance(row, numbers.Integral) and int(row) >= 0 else None,
        message=solution_str,
    )
    return Submission(task, solution_str, sample, digest)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """Score a batch (verl's batch reward manager): lists in, one dict per response out.

    The responses are scored several at once, up to the in-flight limit
    (``reward_kwargs.in_flight``, else ``AKA_IN_FLIGHT``, else the evaluator's default);
    a row that names no task fails the batch before any response is scored.
    """
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    scorer = _scorer(kwargs)
    batch = [
        _submission(src, sol, truth, info, kwargs)
        for src, sol, truth, info in zip(
            data_sources, solution_strs, ground_truths, infos, strict=True
        )
    ]
    return [{"score": r.score, **r.metrics()} for r in scorer.score_batch(batch)]
