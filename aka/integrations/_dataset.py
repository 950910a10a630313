"""Prompt datasets for RL trainers, from a task selection (``aka export prompts``).

One row per task (times ``repeat``): the prompt a policy answers (the task, the rules,
the device, the starting sources and the response format), and where the reward comes
from: the task key and its tree digest, in ``extra_info`` and in the ground truth, so the
reward functions in :mod:`aka.integrations` score each row against exactly the task the
prompt was made from. Columns follow each trainer's layout (FIELD.md "RL trainers";
docs/trainers.md lists them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import polars as pl

from aka.errors import InputError
from aka.events import REGISTRY
from aka.kinds import kind_name, sealed
from aka.prompt import render_prompt
from aka.stats import write_parquet_atomic
from aka.tasks import Task, select
from aka_ledger import Ledger

__all__ = [
    "PROMPT_FORMATS",
    "PromptFormat",
    "export_prompts",
    "prompt_frame",
    "response_format",
    "trainer_prompt",
]

PromptFormat = Literal["verl", "skyrl", "trl"]
PROMPT_FORMATS: tuple[str, ...] = ("verl", "skyrl", "trl")
DATA_SOURCE = "aka"
ABILITY = "gpu_kernel"
ENV_CLASS = "aka"

_TEMPLATE = "{task_section}\n\n{rules}\n\n{device_sheet}"


def response_format(task: Task) -> str:
    """The prompt section that says how to answer (the rules of ``parse_response``)."""
    first = task.spec.editable[0]
    return (
        "## How to answer\n\n"
        f"Answer with the whole new `{first}` in one fenced block that names the file:\n\n"
        f"```python path={first}\n...\n```\n\n"
        "Use one block per editable file you change; files you leave out keep their starting "
        f"source. A unified diff against the starting source (`--- a/{first}` / "
        f"`+++ b/{first}`) is accepted too. Only the editable files are taken from your "
        "answer; nothing else in it is run."
    )


def _sources(task: Task) -> str:
    src = task.path / task.spec.source_dir
    parts = ["## Starting sources"]
    for rel in task.spec.editable:
        text = (src / rel).read_text(errors="replace").rstrip("\n")
        parts.append(f"```python path={rel}\n{text}\n```")
    return "\n\n".join(parts)


def trainer_prompt(task: Task, *, device: str) -> str:
    """The prompt a policy answers for ``task`` (deterministic: same task, same text)."""
    return render_prompt(
        task,
        device=device,
        eval_command=None,
        template=_TEMPLATE,
        extra_sections=[_sources(task), response_format(task)],
    )


def unusable(task: Task, device: str) -> str | None:
    """Why ``task`` cannot be a trainer's prompt on ``device``, or None when it can."""
    src = task.path / task.spec.source_dir
    dev = "cpu" if device == "cpu" else "cuda"
    if dev not in task.spec.devices or not all((src / r).is_file() for r in task.spec.editable):
        return f"no editable sources runnable on {device}"
    if not sealed(task):
        return (
            f"judged by its own commands ({kind_name(task.spec)} kind), which a candidate "
            "can fool: no rewards for training (docs/security.md)"
        )
    return None


def prompt_frame(
    tasks: Sequence[Task],
    digests: dict[str, str],
    *,
    format: PromptFormat = "verl",
    device: str = "cuda",
    repeat: int = 1,
    max_turns: int | None = None,
    split: str = "train",
) -> pl.DataFrame:
    """The prompt rows for ``tasks`` in ``format``'s layout (pure, given the digests).

    Args:
        tasks: the tasks, each with editable files on disk.
        digests: task key -> tree digest (what the evaluator records for the task).
        format: ``verl``, ``skyrl`` or ``trl``.
        device: the device the prompt describes (shapes and device sheet).
        repeat: rows per task (trainers that do not sample a prompt several times).
        max_turns: turns per SkyRL episode, stored in ``extra_info``.
        split: the ``extra_info.split`` value.

    Raises:
        InputError: an unknown format, or ``repeat`` < 1.
    """
    if format not in PROMPT_FORMATS:
        raise InputError(
            f"unknown prompt format {format!r}", fix=f"use one of {', '.join(PROMPT_FORMATS)}"
        )
    if repeat < 1:
        raise InputError(f"repeat must be at least 1, got {repeat}", fix="use --repeat 1")
    rows: list[dict[str, Any]] = []
    for task in tasks:
        text = trainer_prompt(task, device=device)
        truth = json.dumps({"task": task.key, "task_digest": digests[task.key]}, sort_keys=True)
        for _ in range(repeat):
            info = {
                "split": split,
                "index": len(rows),
                "task": task.key,
                "task_digest": digests[task.key],
                "device": device,
                "max_turns": max_turns,
            }
            chat = [{"role": "user", "content": text}]
            if format == "verl":
                row = {
                    "data_source": DATA_SOURCE,
                    "prompt": chat,
                    "ability": ABILITY,
                    "reward_model": {"style": "rule", "ground_truth": truth},
                    "extra_info": info,
                }
            elif format == "skyrl":
                row = {
                    "data_source": DATA_SOURCE,
                    "prompt": chat,
                    "env_class": ENV_CLASS,
                    "reward_spec": {"method": "rule", "ground_truth": truth},
                    "extra_info": info,
                }
            else:
                row = {
                    "prompt": chat,
                    "task": task.key,
                    "task_digest": digests[task.key],
                    "data_source": DATA_SOURCE,
                    "extra_info": info,
                }
            rows.append(row)
    return pl.DataFrame(rows)


def export_prompts(
    tasks_root: Path,
    selectors: list[str],
    out: Path,
    *,
    format: PromptFormat = "verl",
    device: str = "cuda",
    ledger: Ledger | None = None,
    repeat: int = 1,
    max_turns: int | None = None,
) -> tuple[Path, dict[str, str]]:
    """Write :func:`prompt_frame` for the selected tasks to ``out`` (temp file, fsync, rename).

    The task folders are stored in ``ledger``'s content store when one is given, so every
    digest in the file resolves there (``aka ledger cat``); otherwise digests are
    computed in memory.

    Returns:
        The path written, and the selected tasks left out, each with why (no editable
        source files on disk, as for repository tasks before their checkout; not
        runnable on ``device``; judged by scripts a candidate can fool).

    Raises:
        InputError: a selector matches nothing, or no selected task is usable.
    """
    chosen = select(Path(tasks_root), selectors, where="--tasks")
    skipped = {t.key: why for t in chosen if (why := unusable(t, device)) is not None}
    usable = [t for t in chosen if t.key not in skipped]
    if not usable:
        raise InputError(
            f"none of the {len(chosen)} selected tasks can be a prompt on {device}: "
            + "; ".join(f"{k}: {why}" for k, why in list(skipped.items())[:3]),
            where="--tasks",
            fix="select kernel tasks (Triton/CUDA/torch, with reference.py; `aka tasks list`)",
        )
    store = ledger or Ledger.memory(registry=REGISTRY)
    digests = {t.key: store.cas.snapshot(t.path) for t in usable}
    frame = prompt_frame(
        usable, digests, format=format, device=device, repeat=repeat, max_turns=max_turns
    )
    out = write_parquet_atomic(frame, Path(out))
    return out, skipped
