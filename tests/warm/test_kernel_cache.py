"""Compiled-kernel caches: one directory per candidate tree, only for candidate processes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aka.eval import _warm


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    (root / "scratch").mkdir(parents=True)
    for name, data in files.items():
        (root / "cand" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "cand" / name).write_bytes(data)
    return root / "cand"


@settings(max_examples=30, deadline=None)
@given(a=st.binary(max_size=64), b=st.binary(max_size=64))
def test_cache_dir_is_keyed_by_the_candidate_tree(tmp_path_factory: pytest.TempPathFactory,
                                                  a: bytes, b: bytes) -> None:  # fmt: skip
    env_a = _warm.cache_env("aka.eval._candidate", _tree(tmp_path_factory.mktemp("a"), {"k.py": a}))
    env_b = _warm.cache_env("aka.eval._candidate", _tree(tmp_path_factory.mktemp("b"), {"k.py": b}))
    assert set(env_a) == {"TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR"}
    assert (env_a == env_b) == (a == b)
    assert Path(env_a["TRITON_CACHE_DIR"]).is_relative_to(_warm.CACHE_ROOT)


def test_file_names_count_too(tmp_path: Path) -> None:
    one = _warm.cache_env("aka.eval._candidate", _tree(tmp_path / "1", {"a.py": b"x"}))
    two = _warm.cache_env("aka.eval._candidate", _tree(tmp_path / "2", {"b.py": b"x"}))
    assert one != two


def test_no_cache_for_the_checker_or_without_warm_workers(tmp_path: Path) -> None:
    cand = _tree(tmp_path, {"k.py": b"x"})
    assert _warm.cache_env("aka.eval._candidate", cand, warm=False) == {}
    assert _warm.cache_env("aka.eval._checker", cand) == {}
    assert _warm.cache_env("aka.eval._candidate", None) == {}
    assert _warm.cache_env("aka.eval._candidate", cand) != {}
