"""Task kinds: one protocol, one dispatch, one module per kind.

A task kind stages a task's full tree (what a run stores), lays out an evaluation from
digests, judges the candidate there, and names its own validation checks
(:class:`TaskKind`). :func:`kind_of` is the only place that decides what kind a task is;
``aka run``, ``aka tasks validate``, ``aka heldout`` and :mod:`aka.api` all judge the
tree :func:`stage_tree` stores (:func:`staged` loads it back).

Adding a kind is one module with a class like :class:`aka.kinds._command.CommandKind`
and one line below (docs/architecture.md).
"""

from __future__ import annotations

from aka.kinds._command import CommandKind
from aka.kinds._image import ImageKind
from aka.kinds._kernel import KernelKind
from aka.kinds._kernel_checks import downgrade_passes, null_answers, passes
from aka.kinds._protocol import CheckContext, Judge, Stage, Status, TaskKind, TaskValidation
from aka.kinds._registry import (
    baseline_tree,
    kind_name,
    kind_of,
    kinds,
    register_kind,
    sealed,
    stage_tree,
    staged,
    unregister_kind,
)
from aka.kinds._repository import RepositoryKind

__all__ = [
    "CheckContext",
    "Judge",
    "Stage",
    "Status",
    "TaskKind",
    "TaskValidation",
    "baseline_tree",
    "downgrade_passes",
    "kind_name",
    "kind_of",
    "kinds",
    "null_answers",
    "passes",
    "register_kind",
    "sealed",
    "stage_tree",
    "staged",
    "unregister_kind",
]

register_kind(KernelKind())
register_kind(CommandKind())
register_kind(RepositoryKind())
register_kind(ImageKind())
