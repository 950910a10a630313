"""What every importer shares: names, origins, writing a task folder."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from aka.errors import InputError


def slug(text: str) -> str:
    """A task name from a file or folder name: lower case, ``[a-z0-9_]``."""
    out = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return out or "task"


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
