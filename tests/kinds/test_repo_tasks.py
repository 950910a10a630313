"""Repository tasks: pinned checkouts stored at run start, only editable paths evaluated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import repo_project as rp
import yaml

from aka import events as ev
from aka.errors import InputError
from aka.events import REGISTRY
from aka.kind_specs import SOURCE_LOCK
from aka.orchestrator import drive, prepare_run, run
from aka.tasks import load_task
from aka_ledger import Ledger

KEY = "repo/demo/scale"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("AKA_CACHE", str(cache))
    return cache


def _config(tmp: Path, root: Path, arms: list[dict[str, Any]] | None = None) -> Path:
    cfg = {
        "label": "repo",
        "tasks": [KEY],
        "tasks_root": str(root),
        "arms": arms or [{"name": "base", "agent": "noop"}],
        "device": "cpu",
    }
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _scored(led: Ledger, run_id: str) -> dict[str, ev.Scored]:
    out = {}
    for env in led.events(run_id=run_id, types=["Scored"]):
        assert isinstance(env.payload, ev.Scored)
        if env.payload.purpose == "final":
            out[env.attempt_key or ""] = env.payload
    return out


def _file(led: Ledger, tree: str, rel: str) -> str:
    (entry,) = [e for e in led.cas.read_tree(tree) if e.path == rel]
    return led.cas.get(entry.digest).decode()


def _started_tree(led: Ledger, run_id: str) -> str:
    (env,) = led.events(run_id=run_id, types=["RunStarted"])
    assert isinstance(env.payload, ev.RunStarted)
    return env.payload.tasks[KEY]


def test_pinned_commit_is_checked_out_not_the_branch_head(tmp_path: Path) -> None:
    repo = tmp_path / "upstream"
    good = rp.make_repo(repo)
    rp.commit(repo, rp.project_files(rp.WRONG_KERNEL, "v2"), "v2")  # main moves past the pin
    root = tmp_path / "tasks"
    rp.write_task(root, KEY, rp.task_spec({"repository": {"url": str(repo), "commit": good[:10]}}))
    led = Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    rid = run(led, _config(tmp_path, root))
    tree = _started_tree(led, rid)
    assert _file(led, tree, "VERSION") == "v1\n"
    assert json.loads(_file(led, tree, SOURCE_LOCK))["commit"] == good
    assert not any(e.path.startswith(".git/") for e in led.cas.read_tree(tree))
    (scored,) = _scored(led, rid).values()
    assert scored.compiled and scored.correct, scored.error


def test_moving_the_branch_after_start_does_not_change_the_run(tmp_path: Path) -> None:
    repo = tmp_path / "upstream"
    good = rp.make_repo(repo)
    root = tmp_path / "tasks"
    rp.write_task(root, KEY, rp.task_spec({"repository": {"url": str(repo), "branch": "main"}}))
    led = Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    rid, _ = prepare_run(led, _config(tmp_path, root))
    moved = rp.commit(repo, rp.project_files(rp.WRONG_KERNEL, "v2"), "v2")
    drive(led, rid)  # the resume loop: reads the run's stored tree, never the repository
    tree = _started_tree(led, rid)
    assert json.loads(_file(led, tree, SOURCE_LOCK))["commit"] == good
    (ws,) = led.events(run_id=rid, types=["WorkspaceMaterialized"])
    assert isinstance(ws.payload, ev.WorkspaceMaterialized)
    assert _file(led, ws.payload.tree, "VERSION") == "v1\n"
    assert _file(led, ws.payload.tree, "kernels/scale.py") == rp.GOOD_KERNEL
    (scored,) = _scored(led, rid).values()
    assert scored.correct, scored.error
    # A new run resolves the branch again, from the same cached clone.
    rid2, _ = prepare_run(led, _config(tmp_path, root))
    assert json.loads(_file(led, _started_tree(led, rid2), SOURCE_LOCK))["commit"] == moved
    assert len(list((tmp_path / "cache" / "repos").glob("*.git"))) == 1


def _replay(tmp: Path, name: str, files: dict[str, str]) -> dict[str, Any]:
    src = tmp / name
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    # Copies every file (editable or not) into the workspace, as an agent could.
    return {"name": name, "agent": "command", "options": {"command": ["cp", "-r", f"{src}/.", "."]}}


def test_edits_outside_the_editable_paths_have_no_effect(tmp_path: Path) -> None:
    repo = tmp_path / "upstream"
    good = rp.make_repo(repo)
    root = tmp_path / "tasks"
    rp.write_task(root, KEY, rp.task_spec({"repository": {"url": str(repo), "commit": good}}))
    forged = {"check.py": rp.FORGED_CHECK, "bench.py": rp.FORGED_BENCH}
    forged_workload = {"workloads/shapes.json": "[1]"}
    arms = [
        _replay(tmp_path, "wrong", {"kernels/scale.py": rp.WRONG_KERNEL}),
        _replay(tmp_path, "wrongforged", {"kernels/scale.py": rp.WRONG_KERNEL, **forged}),
        _replay(tmp_path, "forged", {**forged, **forged_workload}),
    ]
    led = Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    rid = run(led, _config(tmp_path, root, arms))
    scores = {k.split("#")[1]: s for k, s in _scored(led, rid).items()}
    assert not scores["wrong"].correct and not scores["wrongforged"].correct
    assert scores["wrong"].score == scores["wrongforged"].score
    # Forged timing would claim a 10^9 speedup; the untouched benchmark times the same kernel.
    assert scores["forged"].correct, scores["forged"].error
    assert scores["forged"].speedup is not None and scores["forged"].speedup < 10


def test_spec_and_checkout_errors_name_the_field(tmp_path: Path) -> None:
    repo = tmp_path / "upstream"
    rp.make_repo(repo)
    root = tmp_path / "tasks"
    folder = rp.write_task(
        root, "repo/a/unpinned", rp.task_spec({"repository": {"url": str(repo)}})
    )
    with pytest.raises(InputError, match="pinned `commit`"):
        load_task(folder)
    pinned = rp.task_spec({"repository": {"url": str(repo), "commit": "HEAD"}})
    plain = {
        "commands": None,
        "dtypes": ["float32"],
        "tolerances": {"float32": {"atol": 0, "rtol": 0}},
    }
    folder = rp.write_task(root, "repo/a/nocommands", {**pinned, **plain})
    with pytest.raises(InputError, match="need a `commands` block"):
        load_task(folder)
    both = {**pinned, "image": {"ref": "x:1", "path": "/opt"}}
    with pytest.raises(InputError, match="not both"):
        load_task(rp.write_task(root, "repo/a/both", both))
    with pytest.raises(InputError, match=r"image\.path.*absolute"):
        load_task(
            rp.write_task(
                root,
                "repo/a/rel",
                {**both, "repository": None, "image": {"ref": "x", "path": "opt"}},
            )
        )
    from aka.kinds import stage_tree as task_tree

    led = Ledger.memory(registry=REGISTRY)
    folder = rp.write_task(
        root, "repo/a/missing", rp.task_spec({"repository": {"url": str(repo), "commit": "f" * 40}})
    )
    with pytest.raises(InputError, match=r"repository\.commit"):
        task_tree(led.cas, load_task(folder))
    spec = rp.task_spec({"repository": {"url": str(repo), "commit": "main"}})
    folder = rp.write_task(root, "repo/a/wide", {**spec, "editable": ["kernels", "workloads"]})
    with pytest.raises(InputError, match="would be editable"):
        task_tree(led.cas, load_task(folder))
