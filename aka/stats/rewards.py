"""Reward policies for RL export: the registry of :mod:`aka.scoring`, seen from the read side.

Every attempt's components (compiled, correct, speedup, timings, CI bounds, trials,
hack flags) are stored in the ledger, so any policy can be applied after the fact, to
old runs, on a laptop: reshaping a reward never needs a GPU. An RL trainer's reward
function can call :func:`shape_reward` with the components exported in the row (see
docs/rewards.md) and get exactly the ``reward`` column back.

The policies themselves live in :mod:`aka.scoring`, the module the evaluator scores
with, so a policy name gives the same number in ``aka report`` and in an exported
reward table (``tests/stats/test_stats_rewards.py``); see that module for the rules.
"""

from __future__ import annotations

from aka.scoring import (
    POLICY_VERSION,
    Components,
    RewardPolicy,
    agentkernelarena,
    fast_p,
    log_speedup,
    parse_policy,
    policy_names,
    register_policy,
    shape_reward,
)

__all__ = [
    "POLICY_NAMES",
    "POLICY_VERSION",
    "Components",
    "RewardPolicy",
    "agentkernelarena",
    "fast_p",
    "log_speedup",
    "parse_policy",
    "policy_names",
    "register_policy",
    "shape_reward",
]

POLICY_NAMES: tuple[str, ...] = policy_names()
"""The policy names registered when this module was imported."""
