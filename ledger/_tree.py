"""Trees: a directory's files as a sorted manifest stored as a blob.

A tree pins the exact bytes and modes of every file below a directory: a sorted
manifest of (path, mode, digest, size) in a canonical encoding (:data:`TREE_FORMAT`),
so the same files give the same bytes and the same digest. Interpreter caches and editor
litter (:data:`LITTER`) are never part of a tree, so running code that sits in a
snapshotted directory does not change the directory's digest. The content store
(:mod:`aka_ledger._cas`) stores the blobs; this module decides what a tree is.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from aka_ledger._errors import CorruptError, LedgerError

TREE_FORMAT = "aka-tree/1"

LITTER: tuple[str, ...] = (
    "__pycache__",
    "*.pyc",
    "*.pyo",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".ipynb_checkpoints",
    ".DS_Store",
    "Thumbs.db",
    "*~",
    ".*.swp",
    ".*.swo",
    ".#*",
)
"""Name patterns (``fnmatch``) of files and directories a snapshot leaves out.

They are written by interpreters, tools and editors as a side effect of looking at or
running the code (the first import of a harness writes ``__pycache__/*.pyc``), never
by the author, so two snapshots of the same sources must not differ by them. A path is
left out when any of its components matches. Trees recorded before this rule keep the
digest they were recorded with: nothing is ever re-snapshotted.
"""


def is_litter(path: str) -> bool:
    """Whether a relative POSIX path is (or lies under) a cache or editor leftover."""
    return any(
        fnmatch.fnmatchcase(part, pattern)
        for part in PurePosixPath(path).parts
        for pattern in LITTER
    )


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One file of a tree.

    Attributes:
        path: POSIX path relative to the snapshotted directory.
        mode: ``st_mode`` file type and permission bits (regular file or symlink).
        digest: digest of the content (a symlink's content is its target).
        size: content size in bytes.
    """

    path: str
    mode: int
    digest: str
    size: int


def under(path: str, prefix: str) -> bool:
    """Whether ``path`` is ``prefix`` or lies below it (``""`` and ``"."`` hold everything)."""
    return prefix in ("", ".") or path == prefix or path.startswith(prefix + "/")


def walk(root: Path, paths: Iterable[str] | None) -> Iterator[str]:
    """Relative POSIX paths of the files (and symlinks) below ``root`` or under ``paths``.

    Litter directories are not entered; a path that leaves ``root`` or does not exist
    raises :class:`LedgerError`.
    """
    starts = [""] if paths is None else [PurePosixPath(p).as_posix().strip("/") for p in paths]
    for start in starts:
        if ".." in PurePosixPath(start).parts:
            raise LedgerError(f"path {start!r} leaves the directory", path=root)
        full = root / start if start not in ("", ".") else root
        if full.is_symlink() or full.is_file():
            yield start
        elif full.is_dir():
            for dirpath, dirnames, filenames in os.walk(full):
                dirnames[:] = sorted(d for d in dirnames if not is_litter(d))
                base = Path(dirpath)
                for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
                    yield (base / name).relative_to(root).as_posix()
        else:
            raise LedgerError(
                f"path {start!r} does not exist", path=root, fix="pass paths that exist"
            )


def encode_tree(entries: list[TreeEntry]) -> bytes:
    """Canonical bytes of a tree: same entries, same bytes, same digest."""
    rows = [[e.path, e.mode, e.digest, e.size] for e in sorted(entries, key=lambda e: e.path)]
    return json.dumps({"format": TREE_FORMAT, "entries": rows}, separators=(",", ":")).encode()


def decode_tree(data: bytes, digest: str) -> list[TreeEntry]:
    """Parse a tree blob; raises :class:`CorruptError` if it is not one."""
    try:
        doc = json.loads(data)
        if doc.get("format") != TREE_FORMAT:
            raise ValueError("format")
        entries = [TreeEntry(str(p), int(m), str(d), int(s)) for p, m, d, s in doc["entries"]]
    except (ValueError, TypeError, KeyError, AttributeError):
        raise CorruptError(
            "blob is not a tree", path=digest, fix="pass a digest returned by snapshot()"
        ) from None
    for e in entries:
        if e.path.startswith("/") or ".." in PurePosixPath(e.path).parts:
            raise CorruptError(f"tree entry {e.path!r} leaves the tree", path=digest)
    return entries
