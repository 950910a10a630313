"""Synthetic attempt tables with a known effect, for the statistics tests.

The model: task t has a log speedup ``mu_t ~ N(mu, task_sd)`` and a pass probability
``p_t ~ Beta``; one attempt on arm X is correct with probability ``p_t`` and then has
log speedup ``mu_t + effect_X + N(0, attempt_sd)``. Effects are additive in log space,
so a known ``effect`` is a known ratio of geometric means among correct attempts.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from aka.stats import ATTEMPT_COLUMNS


@dataclass(frozen=True)
class Model:
    """Parameters of the synthetic arena (see module docstring)."""

    mu: float = 0.2
    task_sd: float = 0.4
    attempt_sd: float = 0.25
    pass_a: float = 4.0
    pass_b: float = 2.0
    effect_sd: float = 0.0


def draw_tasks(rng: np.random.Generator, n_tasks: int, model: Model) -> dict[str, np.ndarray]:
    """Task-level parameters: base log speedup, pass probability, task-specific effect."""
    return {
        "mu": rng.normal(model.mu, model.task_sd, n_tasks),
        "p": rng.beta(model.pass_a, model.pass_b, n_tasks),
        "tau": rng.normal(0.0, model.effect_sd, n_tasks) if model.effect_sd else np.zeros(n_tasks),
    }


@dataclass(frozen=True)
class Arm:
    """Identity and effect of one synthetic arm."""

    run_id: str = "run-a"
    arm: str = "base"
    agent: str = "noop"
    effect: float = 0.0
    treated: bool = False
    task_prefix: str = "t"
    device: str = "b3:dev"
    policy: str = "agentkernelarena@1"
    harness: str = "b3:harness"


def attempts(
    rng: np.random.Generator,
    tasks: dict[str, np.ndarray],
    arm: Arm,
    *,
    repeats: int,
    model: Model = Model(),
    intermediate_turns: int = 0,
) -> pl.DataFrame:
    """One arm's attempt table over ``tasks`` with ``repeats`` attempts per task."""
    rows = [
        _row(rng, tasks, arm, model, t, r, turn)
        for t in range(tasks["mu"].size)
        for r in range(repeats)
        for turn in [*range(1, intermediate_turns + 1), 0]
    ]
    return pl.DataFrame(rows, schema=SCHEMA)


def _row(
    rng: np.random.Generator,
    tasks: dict[str, np.ndarray],
    arm: Arm,
    model: Model,
    t: int,
    r: int,
    turn: int,
) -> dict[str, object]:
    compiled = bool(rng.random() < 0.95)
    correct = compiled and bool(rng.random() < tasks["p"][t])
    shift = arm.effect + (tasks["tau"][t] if arm.treated else 0.0)
    log_s = tasks["mu"][t] + shift + rng.normal(0.0, model.attempt_sd)
    speedup = math.exp(log_s) if correct else None
    base = 1e-3
    score = 0.0 if not compiled else 20.0 if not correct else 120.0 + 100.0 * math.exp(log_s)
    components = {"compiled": compiled, "correct": correct, "speedup": speedup}
    task = f"{arm.task_prefix}{t:03d}"
    key = f"{arm.run_id}/{arm.arm}/{task}/{r}"
    return {
        "run_id": arm.run_id,
        "arm": arm.arm,
        "agent": arm.agent,
        "task": task,
        "repeat": r,
        "attempt_key": key,
        "try_no": 1,
        "compiled": compiled,
        "correct": correct,
        "speedup": speedup,
        "score": score,
        "reward_components": json.dumps(components, sort_keys=True),
        "policy": arm.policy,
        "hack_flags": ["replay"] if correct and rng.random() < 0.05 else [],
        "candidate": f"b3:cand-{key}-{turn}",
        "diff": f"b3:diff-{key}-{turn}" if compiled else None,
        "task_digest": f"b3:task-{task}",
        "harness_digest": f"{arm.harness}-{task}",
        "device": arm.device,
        "config_digest": "b3:config",
        "arm_digest": f"b3:arm-{arm.arm}",
        "tokens_in": int(rng.integers(1_000, 50_000)),
        "tokens_out": int(rng.integers(100, 5_000)),
        "cost_usd": float(rng.uniform(0.01, 0.5)),
        "agent_wall_s": float(rng.uniform(10, 600)),
        "eval_wall_s": float(rng.uniform(5, 60)),
        "prompt": f"Optimize the kernel of task {task}.",
        "response": f"--- a/kernel.py\n+++ b/kernel.py\n@@ turn {turn} of {key}\n",
        "baseline_time_s": base,
        "candidate_time_s": base / speedup if speedup else None,
        "speedup_ci_low": speedup * 0.98 if speedup else None,
        "speedup_ci_high": speedup * 1.02 if speedup else None,
        "trials": 100 if compiled else 0,
        "turn": turn,
        "infra_retry": False,
    }


SCHEMA = ATTEMPT_COLUMNS  # the synthetic tables follow the documented attempt table


def experiment(
    seed: int, *, n_tasks: int = 20, repeats: int = 3, effect: float = 0.0, model: Model = Model()
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two arms of one run over the same freshly drawn tasks; B has ``effect``."""
    rng = np.random.default_rng(seed)
    tasks = draw_tasks(rng, n_tasks, model)
    a = attempts(rng, tasks, Arm(arm="base"), repeats=repeats, model=model)
    treat = Arm(arm="treat", effect=effect, treated=True)
    b = attempts(rng, tasks, treat, repeats=repeats, model=model)
    return a, b


def frame_from(records: list[dict[str, object]], **defaults: object) -> pl.DataFrame:
    """An attempt table from a few hand-written rows; unspecified columns get defaults.

    Each record needs ``task`` and ``repeat`` plus the outcome (``correct``,
    ``speedup``); ``compiled`` defaults to ``correct`` and ``score`` follows the
    agentkernelarena rule, so hand-made tables stay internally consistent.
    """
    rows = []
    for rec in records:
        row: dict[str, object] = {
            "run_id": "run-x",
            "arm": "base",
            "agent": "noop",
            "try_no": 1,
            "hack_flags": [],
            "policy": "agentkernelarena@1",
            "device": "b3:dev",
            "config_digest": "b3:config",
            "arm_digest": "b3:arm",
            "tokens_in": 10,
            "tokens_out": 5,
            "cost_usd": 0.5,
            "agent_wall_s": 2.0,
            "eval_wall_s": 1.0,
            "prompt": "optimize",
            "response": "patch",
            "trials": 10,
            "turn": 0,
            "infra_retry": False,
            **defaults,
            **rec,
        }
        task, correct = row["task"], bool(row.get("correct", False))
        speedup = row.get("speedup") if correct else None
        compiled = bool(row.get("compiled", correct))
        row.update(correct=correct, speedup=speedup, compiled=compiled)
        row.setdefault("attempt_key", f"{row['run_id']}/{row['arm']}/{task}/{row['repeat']}")
        row.setdefault("task_digest", f"b3:task-{task}")
        row.setdefault("harness_digest", f"b3:harness-{task}")
        row.setdefault("candidate", f"b3:cand-{row['attempt_key']}")
        row.setdefault("diff", None)
        row.setdefault("reward_components", json.dumps({"correct": correct}))
        row.setdefault(
            "score",
            0.0 if not compiled else 20.0 if not correct else 120.0 + 100.0 * float(speedup),  # type: ignore[arg-type]
        )
        row.setdefault("baseline_time_s", 1e-3)
        row.setdefault("candidate_time_s", 1e-3 / float(speedup) if speedup else None)  # type: ignore[arg-type]
        row.setdefault("speedup_ci_low", None)
        row.setdefault("speedup_ci_high", None)
        rows.append({k: row[k] for k in SCHEMA})
    return pl.DataFrame(rows, schema=SCHEMA)


def true_deltas(
    model: Model, effect: float, *, floor: float, n: int, seed: int
) -> tuple[float, float]:
    """Monte Carlo estimands of the paired deltas: (log speedup, fast_1.0), B minus A.

    The population mean over tasks of the expected per-task delta of effective log
    speedup and of fast_1.0: draw many tasks, one attempt per arm each (repeats do not
    change the expectation), and average B - A.
    """
    rng = np.random.default_rng(seed)
    tasks = draw_tasks(rng, n, model)
    lf = math.log(floor)

    def arm(shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ok = (rng.random(n) < 0.95) & (rng.random(n) < tasks["p"])
        log_s = tasks["mu"] + shift + rng.normal(0.0, model.attempt_sd, n)
        return np.where(ok, np.maximum(log_s, lf), lf), ok & (log_s > 0)

    log_b, fast_b = arm(effect + tasks["tau"])
    log_a, fast_a = arm(np.zeros(n))
    return float((log_b - log_a).mean()), float(fast_b.mean() - fast_a.mean())
