"""What every importer shares: names, origins, writing a task folder."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from aka.errors import InputError

Status = Literal["imported", "imported GPU-only", "refused"]


@dataclass(frozen=True)
class Outcome:
    """What became of one upstream file or folder: the line the user reads for it."""

    path: Path
    status: Status
    detail: str
    """Imported: where to and with which shapes; GPU-only and refused: why."""
    fix: str = ""
    """Refused (and GPU-only): what would make it import (fully)."""
    dest: Path | None = None

    def line(self, root: Path) -> str:
        """``STATUS path -> task: detail (fix: ...)``, one line."""
        where = f" -> {self.dest.relative_to(root).as_posix()}" if self.dest else ""
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"{self.status} {self.path}{where}: {self.detail}{fix}"


@dataclass
class ImportResult:
    """One outcome per upstream file or folder, in the order they were read."""

    outcomes: list[Outcome] = field(default_factory=list)
    on_outcome: Callable[[Outcome], None] | None = None
    """Called with each outcome as it is decided (the CLI prints it at once)."""

    def add(self, outcome: Outcome) -> None:
        """Record one outcome and pass it on."""
        self.outcomes.append(outcome)
        if self.on_outcome is not None:
            self.on_outcome(outcome)

    @property
    def written(self) -> list[Path]:
        """Task folders written (imported, GPU-only included)."""
        return [o.dest for o in self.outcomes if o.dest is not None]

    @property
    def refused(self) -> list[Outcome]:
        """Files or folders not imported, each with the reason and the fix."""
        return [o for o in self.outcomes if o.status == "refused"]


def slug(text: str) -> str:
    """A task name from a file or folder name: lower case, ``[a-z0-9_]``."""
    out = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return out or "task"


def unique_names(paths: list[Path], base: Path, stem: Callable[[Path], str]) -> dict[Path, str]:
    """A task name for each of ``paths`` (found under ``base``), none shared.

    Each gets the slug of ``stem(path)``; where several would share one, each of those
    is named by its path under ``base`` instead (upstream suites repeat names across
    their subfolders: ``rocmbench/hard/gemm`` and ``geak_eval/L3/gemm`` become
    ``rocmbench_hard_gemm`` and ``geak_eval_l3_gemm``), and a number is added to any
    name still taken.
    """
    plain = {p: slug(stem(p)) for p in paths}
    seen = Counter(plain.values())
    out: dict[Path, str] = {}
    taken: set[str] = set()
    for p in paths:
        name = plain[p]
        if seen[name] > 1:
            rel = p.relative_to(base) if p.is_relative_to(base) and p != base else Path(p.name)
            name = slug("_".join([*rel.parent.parts, stem(p)]))
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}_{n}"
        taken.add(candidate)
        out[p] = candidate
    return out


def origin(path: Path, label: str) -> str:
    """``label: path`` plus ``@ commit`` when ``path`` lies in a git repository.

    The path is relative to the repository root when there is one, so the origin
    names the same file on any machine that has that commit.
    """
    folder = path if path.is_dir() else path.parent
    try:
        top = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return f"{label}: {path.resolve()}"
    lines = top.stdout.split()
    if top.returncode != 0 or len(lines) != 2:
        return f"{label}: {path.resolve()}"
    root, commit = Path(lines[0]), lines[1]
    rel = path.resolve().relative_to(root.resolve()).as_posix()
    return f"{label}: {root.name}/{rel} @ {commit}"


def prepare(dest: Path, *, force: bool) -> None:
    """Make sure ``dest`` may be written (it must not exist unless ``force``)."""
    if dest.exists() and not force:
        raise InputError(
            "the task folder already exists",
            where=str(dest),
            fix="pass --force to overwrite it, or import under another --root",
        )
    dest.mkdir(parents=True, exist_ok=True)


def write_spec(dest: Path, spec: dict[str, Any]) -> None:
    """Write ``task.yaml`` in the key order a person reads it."""
    (dest / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=100))
