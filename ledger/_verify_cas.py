"""``verify``'s checks of the content store: blobs referenced, reachable and well named.

Every digest an event references must name a blob that exists and hashes to its name;
with ``deep``, so must every ``b3:`` digest found inside those blobs (a tree's files,
the blobs an arm or a config names). The store's folder holds nothing else. Each check
reports through ``add(path, message)``, the collector :func:`aka_ledger._verify.verify`
passes in.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from aka_ledger._fs import CAS_TEMP_STALE_S

if TYPE_CHECKING:
    from aka_ledger._ledger import Ledger

Add = Callable[[object, str], None]
"""Where a check reports a problem: the path it concerns and what is wrong."""

_HEX = frozenset("0123456789abcdef")


def digests_of(table: pa.Table) -> set[str]:
    return set(pc.list_flatten(table.column("digests")).to_pylist())


def check_digests(add: Add, ledger: Ledger, referenced: dict[str, str], *, deep: bool) -> None:
    """Every referenced blob exists and hashes right; every stored blob hashes right."""
    cas = ledger.cas
    for digest, path in sorted(referenced.items()):
        if not cas.exists(digest):
            add(path, f"references {digest}, which is not in the content store")
    if deep:
        _check_reachable(add, ledger, referenced)
    for digest in cas.digests():
        if not cas.hashes_right(digest):
            add(cas.path(digest) or digest, "blob does not hash to its name (corrupted)")


_DIGEST_RE = re.compile(rb"b3:[0-9a-f]{64}")
_DEEP_MAX = 64 << 20  # blobs larger than this are data (binaries, transcripts), not indexes


def _check_reachable(add: Add, ledger: Ledger, referenced: dict[str, str]) -> None:
    """Follow ``b3:`` digests inside referenced blobs (trees, manifests of any kind)."""
    cas = ledger.cas
    seen = set(referenced)
    todo = [(d, d) for d in sorted(referenced)]
    while todo:
        digest, parent = todo.pop()
        path = cas.path(digest)
        if not cas.exists(digest) or (path is not None and path.stat().st_size > _DEEP_MAX):
            continue
        for found in sorted(set(_DIGEST_RE.findall(cas.get(digest)))):
            child = found.decode()
            if child in seen:
                continue
            seen.add(child)
            if cas.exists(child):
                todo.append((child, digest))
            else:
                add(
                    cas.path(digest) or digest,
                    f"blob {digest} (reached from {parent}) references {child}, "
                    "which is not in the content store",
                )


def check_cas_layout(add: Add, cas_root: Path) -> None:
    """Only two-hex folders of 62-hex blobs; a temporary left by a put is named as such."""
    if not cas_root.is_dir():
        return
    for sub in sorted(cas_root.iterdir()):
        if sub.name == "tmp" and sub.is_dir():
            # A put holds no lock, so a young temp may be one being written now: reported
            # (and removed by compaction) once it is as old as no put ever takes.
            cutoff = time.time() - CAS_TEMP_STALE_S
            for f in sorted(sub.iterdir()):
                with contextlib.suppress(FileNotFoundError):
                    if f.stat().st_mtime < cutoff:
                        add(f, "leftover temporary file of an interrupted put; safe to delete")
            continue
        if not sub.is_dir() or len(sub.name) != 2 or not set(sub.name) <= _HEX:
            add(sub, "stray file: not part of a ledger; move it out of the directory")
            continue
        for f in sorted(sub.iterdir()):
            if len(f.name) != 62 or not set(f.name) <= _HEX or not f.is_file():
                add(f, "stray file in the content store; move it out")
