"""Workspaces: built from the content store, captured back into it.

An agent's workspace is the task's starting sources (plus the reference when the task
shows it), materialized from the task's tree digest into a fresh temporary directory
that is never inside the ledger. After the agent, only the editable files are captured,
as a tree, with a unified diff against the start.
"""

from __future__ import annotations

import difflib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aka.tasks import Task, load_task
from aka_ledger import ContentStore

REFERENCE_NAME = "reference.py"


class TaskCache:
    """Materializes task trees once per process, so tasks are read from digests, not disk.

    Resuming a run therefore sees exactly the task files the run started with, even if
    the folder on disk changed since.
    """

    def __init__(self, cas: ContentStore):
        self.cas = cas
        self._root = Path(tempfile.mkdtemp(prefix="aka-tasks-"))
        self._tasks: dict[str, Task] = {}

    def get(self, key: str, tree: str) -> Task:
        """The task stored under ``tree`` (its key as recorded in the run)."""
        cached = self._tasks.get(tree)
        if cached is None:
            dest = self._root / tree.removeprefix("b3:")[:32]
            if not dest.exists():
                self.cas.materialize(tree, dest)
            cached = load_task(dest)
            self._tasks[tree] = cached
        return cached.model_copy(update={"key": key})

    def close(self) -> None:
        """Remove the materialized copies."""
        shutil.rmtree(self._root, ignore_errors=True)


@dataclass(frozen=True)
class Workspace:
    """A materialized workspace and the tree it started from."""

    path: Path
    start_tree: str


def materialize_workspace(cas: ContentStore, task: Task, dest: Path) -> Workspace:
    """Copy the task's starting sources (and visible reference) into ``dest``."""
    src = task.path / task.spec.source_dir
    shutil.copytree(src, dest, dirs_exist_ok=True)
    if task.spec.reference_visible:
        shutil.copy2(task.path / task.spec.reference, dest / REFERENCE_NAME)
    return Workspace(path=dest, start_tree=cas.snapshot(dest))


def capture(cas: ContentStore, task: Task, workspace: Path) -> tuple[str, bytes, list[str]]:
    """Snapshot the editable files of ``workspace``; return (tree, diff, changed paths).

    A deleted editable file is simply absent from the tree (and fails evaluation).
    """
    present = [p for p in task.spec.editable if (workspace / p).exists()]
    tree = cas.snapshot(workspace, paths=present)
    chunks: list[str] = []
    changed: list[str] = []
    start = task.path / task.spec.source_dir
    for rel in _editable_files(task.spec.editable, start, workspace):
        before = (
            (start / rel).read_text(errors="replace").splitlines(keepends=True)
            if (start / rel).is_file()
            else []
        )
        after = (
            (workspace / rel).read_text(errors="replace").splitlines(keepends=True)
            if (workspace / rel).is_file()
            else []
        )
        if before != after:
            changed.append(rel)
            chunks.extend(difflib.unified_diff(before, after, f"a/{rel}", f"b/{rel}"))
    return tree, "".join(chunks).encode(), changed


def _editable_files(editable: list[str], *roots: Path) -> list[str]:
    """Editable paths as files: a directory (repository tasks) stands for every file in it."""
    out: set[str] = set()
    for rel in editable:
        for root in roots:
            path = root / rel
            if path.is_dir():
                out.update(p.relative_to(root).as_posix() for p in path.rglob("*") if p.is_file())
            else:
                out.add(rel)
    return sorted(out)


def capture_files(
    cas: ContentStore, task: Task, files: dict[str, str | bytes]
) -> tuple[str, bytes]:
    """A candidate tree from files sent without a workspace (the API): the starting
    editable files or folders with ``files`` written over them; (tree, diff)."""
    tmp = Path(tempfile.mkdtemp(prefix="aka-api-"))
    try:
        src = task.path / task.spec.source_dir
        for rel in task.spec.editable:
            if (src / rel).is_dir():
                shutil.copytree(src / rel, tmp / rel, symlinks=True)
            elif (src / rel).is_file():
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / rel, tmp / rel)
        diff: list[str] = []
        for rel in sorted(files):
            data = files[rel]
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data.encode() if isinstance(data, str) else data)
            start = src / rel
            before = start.read_text(errors="replace") if start.is_file() else ""
            after = dest.read_text(errors="replace")
            diff.extend(
                difflib.unified_diff(
                    before.splitlines(keepends=True),
                    after.splitlines(keepends=True),
                    f"a/{rel}",
                    f"b/{rel}",
                )
            )
        present = [p for p in task.spec.editable if (tmp / p).exists()]
        return cas.snapshot(tmp, paths=present), "".join(diff).encode()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def is_editable(rel: str, editable: list[str]) -> bool:
    """Whether ``rel`` is an editable file or lies under an editable folder."""
    return any(rel == e or rel.startswith(e.rstrip("/") + "/") for e in editable)
