"""Repository tasks: a pinned checkout, stored with the task at run start.

A task whose spec carries ``repository: {url, commit, branch?, subdir?}`` optimizes code
inside an upstream project. When it is staged (at run start, and by validation and the
API, through :func:`aka.kinds.stage_tree`) :class:`RepositoryKind` clones the repository once
into a cache (``$AKA_CACHE/repos`` or ``~/.cache/aka/repos``; later runs reuse it, and
fetch only when the commit is missing or a branch must be resolved), resolves the
commit (a branch is resolved here, once), exports that commit's files (no ``.git``)
under the task's ``source_dir``, lays the task folder's own files (``task.yaml``,
workloads) on top, writes ``.aka-source.json`` saying what was checked out, and stores
the whole as one tree. The run records that tree's digest, so every attempt and every
resume sees identical code however the branch moves later. Image tasks
(:mod:`aka.kinds._image`) are stored the same way (:func:`finish_staging`), seeded from
a container image.

Evaluation is the command kind's (:class:`aka.kinds._command.CommandKind`): ``base/``
and ``cand/`` are rebuilt from the stored tree's digest, and only the editable files or
directories come from the candidate's tree, so an edit anywhere else has no effect.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from aka.errors import InputError
from aka.kind_specs import SOURCE_LOCK, RepositorySpec
from aka.kinds._command import CommandKind
from aka.tasks import TASK_FILE, Task, load_task

__all__ = ["RepositoryKind", "cache_root", "checkout", "finish_staging", "resolve_commit"]

GIT_TIMEOUT_S = 600.0


def cache_root() -> Path:
    """Where clones are kept: ``$AKA_CACHE/repos``, else ``~/.cache/aka/repos``."""
    base = os.environ.get("AKA_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "aka") / "repos"


def _git(args: list[str], *, cwd: Path | None = None, where: str) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"git {args[0]} failed: {exc}", where=where, fix="install git") from None
    if proc.returncode != 0:
        raise InputError(
            f"git {' '.join(args[:2])} failed: {proc.stderr.strip()[:500]}",
            where=where,
            fix="check field 'repository.url' (and network access for remote URLs)",
        )
    return proc.stdout


def _url(spec: RepositorySpec, task_dir: Path) -> str:
    """A local path is made absolute (relative to the task folder); URLs pass through."""
    if "://" in spec.url or spec.url.startswith("git@"):
        return spec.url
    path = Path(spec.url).expanduser()
    return str((path if path.is_absolute() else task_dir / path).resolve())


def _clone(url: str, where: str) -> Path:
    """The cached mirror of ``url``, cloned once (into a temp name, then renamed)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    name = Path(url.rstrip("/")).name.removesuffix(".git") or "repo"
    dest = root / f"{name}-{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"
    if not dest.is_dir():
        tmp = Path(tempfile.mkdtemp(prefix=".clone-", dir=root))
        _git(["clone", "--mirror", "--quiet", url, str(tmp / "m")], where=where)
        with contextlib.suppress(OSError):  # another process cloned it first
            (tmp / "m").rename(dest)
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _rev(clone: Path, rev: str, where: str) -> str | None:
    try:
        return _git(
            ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=clone, where=where
        ).strip()
    except InputError:
        return None


def resolve_commit(spec: RepositorySpec, task_dir: Path, *, where: str) -> tuple[Path, str]:
    """(cached clone, full commit SHA) for the spec; a branch is fetched and resolved now.

    Raises:
        InputError: the repository cannot be cloned, or the commit or branch is absent.
    """
    url = _url(spec, task_dir)
    clone = _clone(url, where)
    if spec.commit:
        sha = _rev(clone, spec.commit, where)
        if sha is None:  # a commit newer than the cache
            _git(["fetch", "--quiet", "--prune", "origin"], cwd=clone, where=where)
            sha = _rev(clone, spec.commit, where)
        field, value = "repository.commit", spec.commit
    else:
        assert spec.branch is not None
        _git(["fetch", "--quiet", "--prune", "origin"], cwd=clone, where=where)
        sha = _rev(clone, f"refs/heads/{spec.branch}", where)
        field, value = "repository.branch", spec.branch
    if sha is None:
        raise InputError(
            f"field '{field}': {value!r} is not in {url}",
            where=where,
            fix="pin a commit that exists in the repository",
        )
    return clone, sha


def checkout(clone: Path, sha: str, subdir: str, dest: Path, *, where: str) -> None:
    """Export the files of ``sha`` (under ``subdir``) into ``dest``, without ``.git``."""
    tree = f"{sha}:{subdir.strip('/')}" if subdir.strip("/") else sha
    proc = subprocess.run(
        ["git", "archive", "--format=tar", tree],
        cwd=clone,
        capture_output=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        raise InputError(
            f"git archive {tree} failed: {proc.stderr.decode(errors='replace').strip()[:300]}",
            where=where,
            fix="check field 'repository.subdir'",
        )
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")


def _overlay_task(task: Task, dest: Path) -> None:
    """Lay the task folder's own files over the sources; none may be editable."""
    spec = task.spec
    src_root = (dest / spec.source_dir).resolve()
    for path in sorted(task.path.rglob("*")):
        if path.is_dir():
            continue
        rel = path.relative_to(task.path)
        target = dest / rel
        inside = target.resolve().is_relative_to(src_root)
        rel_src = target.resolve().relative_to(src_root).as_posix() if inside else None
        if rel_src is not None and any(
            rel_src == e.strip("/")
            or rel_src.startswith(e.strip("/") + "/")
            or e.strip("/") in ("", ".")
            for e in spec.editable
        ):
            raise InputError(
                f"field 'editable': task file {rel.as_posix()!r} (a workload or harness file) "
                "would be editable",
                where=str(task.path / TASK_FILE),
                fix="narrow `editable` to the repository's kernel files",
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def finish_staging(task: Task, dest: Path, lock: dict[str, Any]) -> None:
    """Lay the task's own files over fetched sources, write the lock, check the result.

    Raises:
        InputError: a task file would be editable, or the entry, reference or editable
            paths do not exist in the fetched sources.
    """
    _overlay_task(task, dest)
    (dest / SOURCE_LOCK).write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    load_task(dest)  # entry, reference and editable paths now exist, or a named error


class RepositoryKind(CommandKind):
    """A command task whose sources are a pinned checkout (``repository:`` block)."""

    name = "repository"

    def stage(self, task: Task, dest: Path) -> None:
        """Check out the pinned commit under ``source_dir``, then the task's own files."""
        spec = task.spec
        assert spec.repository is not None  # RepositorySpec is this kind's field
        where = str(task.path / TASK_FILE)
        clone, sha = resolve_commit(spec.repository, task.path, where=where)
        checkout(clone, sha, spec.repository.subdir, dest / spec.source_dir, where=where)
        lock: dict[str, Any] = {
            "kind": "repository",
            "url": _url(spec.repository, task.path),
            "commit": sha,
            "branch": spec.repository.branch,
            "subdir": spec.repository.subdir,
        }
        finish_staging(task, dest, lock)
