"""Image tasks through a real dockerd: seeded from an image built here, evaluated inside it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import repo_project as rp
import yaml

from aka import events as ev
from aka.errors import InputError
from aka.events import REGISTRY
from aka.kind_specs import SOURCE_LOCK
from aka.orchestrator import run
from aka.tasks import load_task
from aka_ledger import Ledger

pytestmark = pytest.mark.docker
IMAGE = "aka-test-kernel:latest"
KEY = "image/demo/scale"


@pytest.fixture(scope="module")
def client() -> Any:
    """A client of a running dockerd, or the test skips."""
    found = rp.docker_client()
    if found is None:
        pytest.skip("no Docker daemon answers (start one with .ci/services/docker.sh)")
    return found


@pytest.fixture(scope="module")
def image_id(client: Any) -> str:
    """The test image, imported locally (no registry is reachable)."""
    client.api.import_image_from_data(rp.image_tar(), repository="aka-test-kernel", tag="latest")
    return str(client.images.get(IMAGE).id)


@pytest.fixture
def host_mounts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Lend this interpreter (and torch) to the minimal image, read-only."""
    paths = {"/usr", "/etc", sys.base_prefix, sys.prefix}
    monkeypatch.setenv("AKA_IMAGE_MOUNTS", ",".join(sorted(paths)))


def test_image_task_is_seeded_and_evaluated_inside_the_image(
    tmp_path: Path, image_id: str, host_mounts: None
) -> None:
    root = tmp_path / "tasks"
    spec = rp.task_spec(
        {"type": "image", "image": {"ref": IMAGE, "digest": image_id, "path": "/opt/project"}},
        python=sys.executable,
    )
    rp.write_task(root, KEY, spec)
    wrong = tmp_path / "wrong"
    (wrong / "kernels").mkdir(parents=True)
    (wrong / "kernels" / "scale.py").write_text(rp.WRONG_KERNEL)
    (wrong / "check.py").write_text(rp.FORGED_CHECK)
    cfg = {
        "label": "image",
        "tasks": [KEY],
        "tasks_root": str(root),
        "arms": [
            {"name": "base", "agent": "noop"},
            {
                "name": "wrong",
                "agent": "command",
                "options": {"command": ["cp", "-r", f"{wrong}/.", "."]},
            },
        ],
        "device": "cpu",
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
    led = Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    rid = run(led, tmp_path / "run.yaml")
    (started,) = led.events(run_id=rid, types=["RunStarted"])
    assert isinstance(started.payload, ev.RunStarted)
    tree = {e.path: e for e in led.cas.read_tree(started.payload.tasks[KEY])}
    lock = json.loads(led.cas.get(tree[SOURCE_LOCK].digest))
    assert lock["image_id"] == image_id and lock["path"] == "/opt/project"
    assert led.cas.get(tree["kernels/scale.py"].digest).decode() == rp.GOOD_KERNEL
    assert "workloads/shapes.json" in tree
    scores: dict[str, ev.Scored] = {}
    for env in led.events(run_id=rid, types=["Scored"]):
        assert isinstance(env.payload, ev.Scored)
        scores[(env.attempt_key or "").split("#")[1]] = env.payload
    assert scores["base"].correct, scores["base"].error
    assert scores["base"].network == "none (container)"
    assert scores["wrong"].compiled and not scores["wrong"].correct
    (timed,) = led.events(run_id=rid, types=["KernelTimed"])
    assert isinstance(timed.payload, ev.KernelTimed)
    device = json.loads(led.cas.get(timed.payload.device))
    assert device["judge"] == "task commands in image" and device["image"] == image_id


def test_a_wrong_digest_or_path_is_refused_at_run_start(tmp_path: Path, image_id: str) -> None:
    from aka.kinds import stage_tree as task_tree

    led = Ledger.memory(registry=REGISTRY)
    root = tmp_path / "tasks"
    bad = {"ref": IMAGE, "digest": "sha256:" + "0" * 64, "path": "/opt/project"}
    folder = rp.write_task(root, "image/a/digest", rp.task_spec({"image": bad}))
    with pytest.raises(InputError, match=r"image\.digest"):
        task_tree(led.cas, load_task(folder))
    folder = rp.write_task(
        root, "image/a/path", rp.task_spec({"image": {"ref": IMAGE, "path": "/opt/nothing"}})
    )
    with pytest.raises(InputError, match=r"image\.path"):
        task_tree(led.cas, load_task(folder))
