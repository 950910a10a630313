"""Paths and files a user (or a hostile task author) hands in: clear errors, no escapes."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from arena_helpers import write_config

from aka.errors import InputError
from aka.tasks import load_task, select

AFFINE = "torch/ops/affine"


def test_a_selector_outside_tasks_root_is_a_clear_error(tmp_path: Path, tasks_root: Path) -> None:
    outside = tmp_path / "elsewhere" / "affine"
    shutil.copytree(tasks_root / AFFINE, outside)
    with pytest.raises(InputError, match="resolves outside tasks_root") as info:
        select(tasks_root, ["../elsewhere/affine"], where="run.yaml")
    assert info.value.where == "run.yaml"


def test_a_selector_through_a_symlinked_folder_outside_is_refused(
    tmp_path: Path, tasks_root: Path
) -> None:
    outside = tmp_path / "elsewhere"
    shutil.copytree(tasks_root / "torch", outside)
    (tasks_root / "linked").symlink_to(outside)
    with pytest.raises(InputError, match="resolves outside tasks_root"):
        select(tasks_root, ["linked/ops/affine"])


def test_run_with_an_outside_selector_exits_2_without_traceback(
    tmp_path: Path, tasks_root: Path, cli: Callable[..., object]
) -> None:
    shutil.copytree(tasks_root / AFFINE, tmp_path / "elsewhere")
    cfg = write_config(tmp_path, tasks_root, tasks=["../elsewhere"])
    result = cli("run", str(cfg), "--ledger", str(tmp_path / "ledger"))
    assert result.code == 2, result  # type: ignore[attr-defined]
    err = result.err  # type: ignore[attr-defined]
    assert "resolves outside tasks_root" in err and "Traceback" not in err


@pytest.mark.parametrize("link", ["source/kernel.py", "reference.py"])
def test_a_task_file_linking_outside_the_task_is_refused(
    tmp_path: Path, tasks_root: Path, link: str
) -> None:
    folder = tasks_root / AFFINE
    secret = tmp_path / "secret.py"
    secret.write_text((folder / link).read_text())  # a valid file: only the link is wrong
    (folder / link).unlink()
    (folder / link).symlink_to(secret)
    with pytest.raises(InputError, match="points outside the task folder") as info:
        load_task(folder, root=tasks_root)
    assert link in info.value.message and "copy the file" in (info.value.fix or "")


def test_a_directory_link_outside_the_task_is_refused(tmp_path: Path, tasks_root: Path) -> None:
    folder = tasks_root / AFFINE
    (folder / "data").symlink_to("/etc")
    with pytest.raises(InputError, match="'data' points outside"):
        load_task(folder, root=tasks_root)


def test_a_link_that_stays_inside_the_task_is_kept(tasks_root: Path) -> None:
    folder = tasks_root / AFFINE
    os.symlink("kernel.py", folder / "source" / "alias.py")
    assert load_task(folder, root=tasks_root).key == AFFINE


def test_a_key_written_twice_in_a_run_config_is_refused(
    tmp_path: Path, tasks_root: Path, cli: Callable[..., object]
) -> None:
    cfg = write_config(tmp_path, tasks_root)
    cfg.write_text(cfg.read_text() + "device: cuda\n")  # `device: cpu` is already there
    result = cli("run", str(cfg), "--ledger", str(tmp_path / "ledger"))
    assert result.code == 2  # type: ignore[attr-defined]
    err = result.err  # type: ignore[attr-defined]
    assert str(cfg) in err and "duplicate key 'device'" in err and "Traceback" not in err


def test_a_key_written_twice_in_a_task_spec_is_refused(tasks_root: Path) -> None:
    spec = tasks_root / AFFINE / "task.yaml"
    spec.write_text(spec.read_text().replace("seeds: 2\n", "seeds: 2\nname: other\n"))
    with pytest.raises(InputError, match="duplicate key 'name'") as info:
        load_task(spec.parent, root=tasks_root)
    assert info.value.where == str(spec) and info.value.fix == "write each key once per mapping"


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("SELECT 1; SELECT 2", "SELECT, SELECT"),
        ("CREATE TABLE t AS SELECT * FROM events", "CREATE"),
        ("PRAGMA version", "PRAGMA"),
        ("SET threads = 1", "SET"),
        ("ATTACH 'other.duckdb'", "ATTACH"),
        ("COPY (SELECT 1) TO 'out.csv'", "COPY"),
        ("", "no statement"),
    ],
)
def test_sql_refuses_anything_but_one_read_only_query(
    tmp_path: Path, cli: Callable[..., object], query: str, found: str
) -> None:
    from aka.events import REGISTRY
    from aka_ledger import Ledger

    Ledger.open(tmp_path / "ledger", registry=REGISTRY).close()
    result = cli("sql", query, "--ledger", str(tmp_path / "ledger"))
    assert result.code == 2  # type: ignore[attr-defined]
    err = result.err  # type: ignore[attr-defined]
    assert f"got {found}" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger"]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT count(*) AS n FROM events",
        "WITH x AS (SELECT 1 AS n) SELECT n FROM x",
        "FROM events SELECT count(*) AS n",
        "EXPLAIN SELECT 1",
    ],
)
def test_sql_runs_one_read_only_query(
    tmp_path: Path, cli: Callable[..., object], query: str
) -> None:
    from aka.events import REGISTRY
    from aka_ledger import Ledger

    Ledger.open(tmp_path / "ledger", registry=REGISTRY).close()
    result = cli("sql", query, "--ledger", str(tmp_path / "ledger"))
    assert result.code == 0, result  # type: ignore[attr-defined]
