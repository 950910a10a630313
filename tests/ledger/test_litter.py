"""Interpreter caches and editor litter never change a tree's digest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ledger_vocab import REGISTRY

from aka_ledger import Ledger
from aka_ledger._tree import TreeEntry, encode_tree, is_litter


def _sources(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "kernel.py").write_text("def f(x):\n    return x\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "README.md").write_text("notes\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o755)


def _litter(root: Path) -> None:
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "kernel.cpython-312.pyc").write_bytes(b"\x00\x01pyc")
    (root / "pkg" / "stale.pyc").write_bytes(b"\x00")
    (root / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (root / "pkg" / "kernel.py~").write_text("def f(x):\n    return 0\n")
    (root / "pkg" / ".kernel.py.swp").write_bytes(b"b0VIM 9.0")
    (root / ".pytest_cache" / "v").mkdir(parents=True)
    (root / ".pytest_cache" / "v" / "lastfailed").write_text("{}")


@pytest.fixture(params=["file", "memory"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Ledger:
    if request.param == "file":
        return Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    return Ledger.memory(registry=REGISTRY)


def test_caches_and_editor_files_leave_the_digest_unchanged(ledger: Ledger, tmp_path: Path) -> None:
    src = tmp_path / "src"
    _sources(src)
    clean = ledger.cas.snapshot(src)
    _litter(src)
    assert ledger.cas.snapshot(src) == clean
    assert ledger.cas.snapshot(src, paths=["pkg"]) == ledger.cas.snapshot(
        src, paths=["pkg/kernel.py", "pkg/__init__.py"]
    )
    named = ledger.cas.snapshot(src, paths=["pkg/stale.pyc", "README.md"])
    assert [e.path for e in ledger.cas.read_tree(named)] == ["README.md"]
    out = tmp_path / "out"
    ledger.cas.materialize(clean, out)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "README.md",
        "pkg/__init__.py",
        "pkg/kernel.py",
        "run.sh",
    ]


def test_a_real_edit_still_changes_the_digest(ledger: Ledger, tmp_path: Path) -> None:
    src = tmp_path / "src"
    _sources(src)
    _litter(src)
    before = ledger.cas.snapshot(src)
    (src / "pkg" / "kernel.py").write_text("def f(x):\n    return 2 * x\n")
    assert ledger.cas.snapshot(src) != before
    (src / "pkg" / "notes~draft.md").write_text("kept: only a trailing ~ is a backup\n")
    assert "pkg/notes~draft.md" in {e.path for e in ledger.cas.read_tree(ledger.cas.snapshot(src))}


def test_a_tree_recorded_with_caches_keeps_its_digest_and_files(
    ledger: Ledger, tmp_path: Path
) -> None:
    """A tree written before the rule (caches inside) reads back exactly as recorded."""
    pyc = b"\x00\x01pyc"
    src = b"x = 1\n"
    entries = [
        TreeEntry("__pycache__/k.cpython-312.pyc", 0o100644, ledger.cas.put(pyc), len(pyc)),
        TreeEntry("k.py", 0o100644, ledger.cas.put(src), len(src)),
    ]
    old = ledger.cas.put(encode_tree(entries))
    assert [e.path for e in ledger.cas.read_tree(old)] == [e.path for e in entries]
    out = tmp_path / "old"
    ledger.cas.materialize(old, out)
    assert (out / "__pycache__" / "k.cpython-312.pyc").read_bytes() == pyc
    assert ledger.cas.put(encode_tree(entries)) == old, "the recorded digest is never recomputed"


@pytest.mark.parametrize(
    ("path", "litter"),
    [
        ("a/__pycache__/m.cpython-312.pyc", True),
        ("m.pyc", True),
        ("deep/.DS_Store", True),
        ("k.py~", True),
        (".k.py.swp", True),
        (".#k.py", True),
        ("k.py", False),
        ("swp/k.py", False),
        ("pycache_notes.md", False),
        (".github/workflows/ci.yml", False),
    ],
)
def test_the_rule_matches_path_components(path: str, litter: bool) -> None:
    assert is_litter(path) is litter
