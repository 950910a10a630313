"""TRL: a reward function for ``GRPOTrainer`` (and every trainer with TRL's signature).

::

    from aka.integrations.trl import AkaReward
    reward = AkaReward(task="triton2triton/llm/softmax", tasks_root="tasks", device="cpu")
    trainer = GRPOTrainer(model=..., reward_funcs=[reward], train_dataset=dataset, ...)

TRL calls ``reward(prompts=..., completions=..., **columns)`` with every other dataset
column as a list, plus ``trainer_state``; completions are strings, or lists of chat
messages for conversational data. Each completion is read as a candidate
(docs/trainers.md), evaluated, and recorded as an attempt with the policy step
(``trainer_state.global_step``) and its sample index within that step. The completions of
one call are scored several at once, up to the in-flight limit (``in_flight=``), and each
candidate is timed within the timing budget (``timing=``, docs/trainers.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aka.api import Sample
from aka.config import TimingSettings
from aka.integrations._scorer import Reward, Scorer, Submission, open_scorer
from aka.integrations._text import chat_text, message_text, row_task

__all__ = ["AkaReward"]


class AkaReward:
    """A TRL reward function: completions in, aka's scores out.

    Args:
        task: the task every row is for; rows may name their own in a ``task`` column
            (or ``task_column``), or in ``extra_info`` as ``aka export prompts`` writes.
        tasks_root: the tasks folder (default ``AKA_TASKS_ROOT`` or ``tasks``).
        device: where candidates run (default ``AKA_DEVICE`` or ``auto``).
        ledger: the ledger folder (default ``AKA_LEDGER``).
        url: an ``aka serve`` address (default ``AKA_SERVE_URL``); when set, candidates
            are scored there and the other settings are the server's.
        policy: the scoring policy.
        run_name: the trainer's run name, recorded with every sample.
        task_column: the dataset column that names each row's task.
        in_flight: completions of a call scored at once (default ``AKA_IN_FLIGHT``, else
            the evaluator's default, :func:`aka.inflight.default_in_flight`; for a server,
            its limit); 1 scores them in turn.
        timing: the timing budget of each candidate: a :class:`aka.config.TimingSettings`
            or a mapping of its keys (``{"max_time_s": 0.2, "min_samples": 5}``); default
            the evaluator's. Each candidate holds the device alone while it is timed, so
            this bounds completions scored per minute. Not with ``url`` (the server times
            with its own settings).
        scorer: a ready :class:`~aka.integrations._scorer.Scorer` (tests, custom setups).

    Attributes:
        __name__: ``aka_reward``; TRL logs rewards under the function's name.
        last: the :class:`Reward` of each completion of the last call.
    """

    def __init__(
        self,
        task: str | None = None,
        *,
        tasks_root: str | Path | None = None,
        device: str | None = None,
        ledger: str | Path | None = None,
        url: str | None = None,
        policy: str = "agentkernelarena",
        run_name: str | None = None,
        task_column: str = "task",
        in_flight: int | None = None,
        timing: TimingSettings | Mapping[str, Any] | None = None,
        scorer: Scorer | None = None,
    ):
        self.__name__ = "aka_reward"
        self.task = task
        self.task_column = task_column
        self.run_name = run_name
        self.scorer = scorer or open_scorer(
            url=url,
            ledger=ledger,
            tasks_root=tasks_root,
            device=device,
            policy=policy,
            label="trl",
            in_flight=in_flight,
            timing=timing,
            where="AkaReward",
        )
        self.last: list[Reward] = []
        self._seen: Counter[int | None] = Counter()

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float]:
        """Score each completion, several at once; returns one float per completion, in order."""
        state = kwargs.get("trainer_state")
        step = getattr(state, "global_step", None)
        tasks = kwargs.get(self.task_column) or [None] * len(completions)
        infos = kwargs.get("extra_info") or [None] * len(completions)
        digests = kwargs.get("task_digest") or [None] * len(completions)
        first = self._seen[step]
        self._seen[step] += len(completions)
        self.last = []
        batch = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            if tasks[i]:  # the row's own task column wins, then extra_info, then task=
                key, digest = tasks[i], digests[i]
            else:
                key, digest = row_task(self.task, infos[i], None, where="trl dataset row")
            text = message_text(completion)  # as the model said it (the sample stores it)
            sample = Sample(
                trainer="trl",
                trainer_run=self.run_name,
                step=step,
                index=first + i,
                prompt=chat_text(prompt),
                message=text,
            )
            batch.append(Submission(key, text, sample, digest))
        self.last = self.scorer.score_batch(batch)
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra("aka_attempt", [r.attempt_key for r in self.last])
            log_extra("aka_error", [(r.error or "")[:200] for r in self.last])
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and self.last:
            for name in ("compiled", "correct", "parsed"):
                log_metric(
                    f"aka/{name}", sum(r.metrics()[name] for r in self.last) / len(self.last)
                )
        return [r.score for r in self.last]

    def close(self) -> None:
        """Release the evaluator."""
        self.scorer.close()
