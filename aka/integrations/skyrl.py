"""SkyRL: a multi-turn text environment registered as ``aka`` in skyrl-gym.

Each turn the policy answers with a candidate (docs/trainers.md, "The response format");
the environment evaluates it, rewards it with aka's score, and answers with aka's
feedback (the compile error, the first failing case, the speedup per shape), as a coding
agent hears from ``aka eval``. The episode ends after ``max_turns`` turns. Every turn is
an attempt in the ledger, recorded with its episode id and turn number.

``import aka.integrations.skyrl`` registers the environment (``register()`` does it
again if a registry was reset). Rows come from ``aka export prompts --format skyrl``
(``env_class: aka``, the task in ``extra_info`` and ``reward_spec.ground_truth``); the
environment's settings (``tasks_root``, ``device``, ``ledger``, ``url``, ``policy``,
``in_flight``, ``timing``) come from ``env_config`` or the ``AKA_*`` environment
variables, and ``max_turns`` from the row (``max_turns`` or ``extra_info.max_turns``),
then ``env_config``, else 3. ``timing`` (a mapping of :class:`aka.config.TimingSettings`
keys) is the timing budget of each turn's candidate.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
from skyrl_gym.envs.registration import register as _register
from skyrl_gym.envs.registration import registry as _registry

from aka.api import Sample
from aka.integrations._scorer import SETTINGS, Reward, shared_scorer
from aka.integrations._text import chat_text, row_task

__all__ = ["ENV_ID", "AkaEnv", "register"]

ENV_ID = "aka"
"""The id rows name in ``env_class`` (``aka.stats`` exports use the same)."""
DEFAULT_MAX_TURNS = 3

NEXT_TURN = (
    "Improve the kernel using this feedback. Answer with the whole new file in a fenced "
    "block (```python path=FILE), or a unified diff against the starting source."
)


def _mapping(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    return {k: value[k] for k in value}  # an OmegaConf DictConfig


class AkaEnv(BaseTextEnv):
    """One episode at one task: each ``step(action)`` evaluates a candidate.

    Args:
        env_config: the environment's settings (:data:`aka.integrations._scorer.SETTINGS`
            plus ``max_turns``).
        extras: the dataset row (``reward_spec``, ``extra_info``, optional ``max_turns``).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None):
        super().__init__()
        config = _mapping(env_config)
        row = dict(extras or {})
        info = _mapping(row.get("extra_info"))
        spec = _mapping(row.get("reward_spec"))
        self.task, self.task_digest = row_task(
            None, info, spec.get("ground_truth"), where="skyrl row"
        )
        self.max_turns = int(
            row.get("max_turns")
            or info.get("max_turns")
            or config.get("max_turns")
            or DEFAULT_MAX_TURNS
        )
        settings = {k: config.get(k) for k in SETTINGS}
        extra = sorted(set(config) - {*SETTINGS, "max_turns"})
        settings.update({k: config[k] for k in extra})  # rejected by shared_scorer, by name
        self.scorer = shared_scorer(settings, label="skyrl", where="env_config")
        self.episode = uuid.uuid4().hex
        self.prompt = ""
        self.history: list[Reward] = []

    def init(self, prompt: Any) -> tuple[Any, dict[str, Any]]:
        """Keep the prompt (recorded with the first turn); the prompt goes on unchanged."""
        self.prompt = chat_text(prompt)
        return prompt, {"task": self.task, "episode": self.episode}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Evaluate ``action`` as a candidate; the reward is its score."""
        self.turns += 1
        asked = self.prompt if self.turns == 1 else self.history[-1].feedback
        sample = Sample(
            trainer="skyrl", episode=self.episode, turn=self.turns, prompt=asked, message=action
        )
        r = self.scorer.score(self.task, action, sample, task_digest=self.task_digest)
        self.history.append(r)
        done = self.turns >= self.max_turns
        observations = [] if done else [{"role": "user", "content": f"{r.feedback}\n\n{NEXT_TURN}"}]
        return BaseTextEnvStepOutput(
            observations=observations,
            reward=r.score,
            done=done,
            metadata={
                "run_id": r.run_id,
                "attempt_key": r.attempt_key,
                "eval_id": r.eval_id,
                "error": r.error,
                **r.metrics(),
            },
        )

    def get_metrics(self) -> dict[str, Any]:
        """Per episode: turns taken, best score, and how many turns were correct."""
        return {
            "turns": self.turns,
            "best_score": max((r.score for r in self.history), default=0.0),
            "correct_turns": sum(r.correct for r in self.history),
        }


def register() -> None:
    """Register :class:`AkaEnv` as ``aka`` in skyrl-gym (again, if it is not there)."""
    if ENV_ID not in _registry:
        _register(id=ENV_ID, entry_point=f"{__name__}:AkaEnv")


register()
