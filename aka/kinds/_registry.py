"""The one dispatch: which kind a task is, and its staged tree.

A task's kind is its ``kind`` field when set, else derived from its fields (a
``repository`` or ``image`` block, a ``commands`` block, or none: a kernel task).
:func:`stage_tree` is what ``aka run``, ``aka tasks validate`` and the API record for a
task, and :func:`staged` loads the task back from that tree, so every path judges the
same bytes.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from aka.errors import InputError
from aka.kinds._protocol import TaskKind
from aka.tasks import TASK_FILE, Task, TaskSpec, load_task

if TYPE_CHECKING:
    from aka_ledger import ContentStore

__all__ = [
    "baseline_tree",
    "kind_name",
    "kind_of",
    "kinds",
    "register_kind",
    "stage_tree",
    "staged",
    "unregister_kind",
]

_KINDS: dict[str, TaskKind] = {}


def register_kind(kind: TaskKind) -> None:
    """Make ``kind`` available to tasks whose ``kind`` (or derived kind) is its name.

    Raises:
        ValueError: a kind of that name is registered already.
    """
    if kind.name in _KINDS:
        raise ValueError(f"a task kind named {kind.name!r} is registered already")
    _KINDS[kind.name] = kind


def unregister_kind(name: str) -> None:
    """Forget the kind ``name`` (a test's toy kind); unknown names are ignored."""
    _KINDS.pop(name, None)


def kinds() -> dict[str, TaskKind]:
    """Every registered kind, by name."""
    return dict(_KINDS)


def kind_name(spec: TaskSpec) -> str:
    """The spec's ``kind``, or the one its fields imply."""
    if spec.kind is not None:
        return spec.kind
    if spec.repository is not None:
        return "repository"
    if spec.image is not None:
        return "image"
    return "command" if spec.commands is not None else "kernel"


def kind_of(task: Task) -> TaskKind:
    """The kind that stages and judges ``task``.

    Raises:
        InputError: the task names a kind that is not registered.
    """
    name = kind_name(task.spec)
    found = _KINDS.get(name)
    if found is None:
        raise InputError(
            f"field 'kind': no task kind {name!r} (registered: {sorted(_KINDS)})",
            where=str(task.path / TASK_FILE),
            fix="use one of the registered kinds, or register yours (docs/architecture.md)",
        )
    return found


def sealed(task: Task) -> bool:
    """Whether ``task``'s verdicts are decided where the candidate's code cannot reach.

    A kind says so with ``sealed = True`` (the kernel kind: the candidate runs in a
    process of its own, and the checker and the sealed timing core decide). A kind that
    does not say so counts as unsealed: its judge runs the candidate's code in the
    process that decides (a command task's own scripts), so a candidate can forge its
    verdict, and trainers do not take rewards from it (:class:`aka.api.Evaluator`).
    """
    return getattr(kind_of(task), "sealed", False) is True


def stage_tree(cas: ContentStore, task: Task) -> str:
    """The tree digest a run records for ``task``: its kind's staged layout, stored."""
    with tempfile.TemporaryDirectory(prefix="aka-stage-") as tmp:
        kind_of(task).stage(task, Path(tmp))
        return cas.snapshot(Path(tmp))


@contextmanager
def staged(cas: ContentStore, task: Task) -> Iterator[tuple[Task, str]]:
    """``task`` loaded back from its staged tree, and that tree's digest.

    What validation and the API judge: the same tree ``aka run`` records, materialized
    from the content store, so an author's folder and a run never differ.
    """
    tree = stage_tree(cas, task)
    root = Path(tempfile.mkdtemp(prefix="aka-staged-"))
    try:
        folder = root / task.key  # the key's depth: the suite above it is this folder
        cas.materialize(tree, folder)
        yield load_task(folder, root=root), tree
    finally:
        shutil.rmtree(root, ignore_errors=True)


def baseline_tree(cas: ContentStore, task: Task) -> str:
    """The starting editable files (or folders) of a staged task, as a candidate tree."""
    src = task.path / task.spec.source_dir
    return cas.snapshot(src, paths=[p for p in task.spec.editable if (src / p).exists()])
