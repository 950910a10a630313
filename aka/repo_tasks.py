"""Repository tasks: a pinned checkout, stored with the task at run start.

A task whose spec carries ``repository: {url, commit, branch?, subdir?}`` optimizes code
inside an upstream project. At run start :func:`task_tree` clones the repository once
into a cache (``$AKA_CACHE/repos`` or ``~/.cache/aka/repos``; later runs reuse it, and
fetch only when the commit is missing or a branch must be resolved), resolves the
commit (a branch is resolved here, once), exports that commit's files (no ``.git``)
under the task's ``source_dir``, lays the task folder's own files (``task.yaml``,
workloads) on top, writes ``.aka-source.json`` saying what was checked out, and stores
the whole as one tree. The run records that tree's digest, so every attempt and every
resume sees identical code however the branch moves later. Image tasks
(:mod:`aka.image_tasks`) are stored the same way, seeded from a container image.

Evaluation (:func:`command_verdict`, dispatched by ``aka.eval._evaluate.evaluate`` for
every task with a ``commands`` block) follows the evaluator's rules: ``base/`` and
``cand/`` are rebuilt from the stored tree's digest, and only the editable files or
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
from typing import TYPE_CHECKING, Any

from aka.errors import InputError
from aka.tasks import SOURCE_LOCK, TASK_FILE, RepositorySpec, Task

if TYPE_CHECKING:
    from aka.eval import EvalRequest, Verdict
    from aka_ledger import ContentStore, Ledger

__all__ = [
    "build_command_dirs",
    "cache_root",
    "checkout",
    "command_verdict",
    "resolve_commit",
    "stage_task",
    "task_tree",
]

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


def stage_task(task: Task, dest: Path) -> dict[str, Any]:
    """Lay out a repository or image task's full tree in ``dest``; returns the lock record."""
    spec = task.spec
    where = str(task.path / TASK_FILE)
    sources = dest / spec.source_dir
    if spec.repository is not None:
        clone, sha = resolve_commit(spec.repository, task.path, where=where)
        checkout(clone, sha, spec.repository.subdir, sources, where=where)
        lock: dict[str, Any] = {
            "kind": "repository",
            "url": _url(spec.repository, task.path),
            "commit": sha,
            "branch": spec.repository.branch,
            "subdir": spec.repository.subdir,
        }
    else:
        from aka.image_tasks import seed_from_image

        assert spec.image is not None
        lock = seed_from_image(spec.image, sources, where=where)
    _overlay_task(task, dest)
    (dest / SOURCE_LOCK).write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    from aka.tasks import load_task

    load_task(dest)  # entry, reference and editable paths now exist, or a named error
    return lock


def task_tree(cas: ContentStore, task: Task) -> str:
    """The tree digest a run records for ``task``: the folder, plus sources when fetched."""
    if task.spec.repository is None and task.spec.image is None:
        return cas.snapshot(task.path)
    with tempfile.TemporaryDirectory(prefix="aka-stage-") as tmp:
        stage_task(task, Path(tmp))
        return cas.snapshot(Path(tmp))


def build_command_dirs(ledger: Ledger, req: EvalRequest, dest: Path) -> dict[str, Path]:
    """``task/``, ``base/``, ``cand/`` from digests; editable files or folders from the candidate."""
    spec = req.task.spec
    task_dir, base, cand = dest / "task", dest / "base", dest / "cand"
    ledger.cas.materialize(req.task_tree, task_dir)
    shutil.copytree(task_dir / spec.source_dir, base, symlinks=True)
    shutil.copytree(task_dir / spec.source_dir, cand, symlinks=True)
    for rel in spec.editable:
        target = cand / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
    ledger.cas.materialize(req.candidate, cand, only=spec.editable)
    return {"task": task_dir, "base": base, "cand": cand}


def command_verdict(ledger: Ledger, req: EvalRequest, dest: Path) -> Verdict:
    """Evaluate a command-driven task (plain, repository or image) in ``dest``."""
    from aka.command_tasks import run_commands
    from aka.eval import Verdict

    spec = req.task.spec
    assert spec.commands is not None
    dirs = build_command_dirs(ledger, req, dest)
    network = "not isolated"
    if spec.image is not None:
        from aka.image_tasks import run_in_image

        lock = json.loads((dirs["task"] / SOURCE_LOCK).read_text())
        result = run_in_image(
            lock["image_id"],
            spec.commands,
            root=dest,
            base=dirs["base"],
            cand=dirs["cand"],
            device=req.device,
            time=req.time,
        )
        network = "none (container)"
    else:
        result = run_commands(
            spec.commands, base=dirs["base"], cand=dirs["cand"], device=req.device, time=req.time
        )
    compiled = result["compiled"] or {"ok": False, "error": result["error"], "wall_s": 0.0}
    return Verdict(
        compiled=compiled,
        cases=result["cases"],
        timing=result["timing"],
        device=result["device"],
        flags=[],
        evidence=[],
        correct=bool(result["correct"]),
        error=result["error"],
        network=network,
    )
