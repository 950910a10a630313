"""`aka tasks validate`, `aka run` and the API judge the same staged tree, so they agree.

Each path used to build its own tree: validation and the API snapshotted the bare task
folder (a repository or image task's folder holds no sources until it is staged), while
`aka run` stored the checked-out tree. Here each of the three judges the starting
sources of a command, a repository and an image task, once with a correct kernel and
once with a wrong one, and all three must reach the same verdict.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import repo_project as rp
import yaml

from aka import events as ev
from aka.api import Evaluator
from aka.config import TimingSettings
from aka.events import REGISTRY
from aka.orchestrator import run
from aka.validate import validate_task
from aka_ledger import Ledger

KEY = "kinds/demo/scale"
FAST = TimingSettings(max_time_s=0.2, min_samples=3)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AKA_CACHE", str(tmp_path / "cache"))


def _command_task(tmp: Path, kernel: str) -> dict[str, Any]:
    folder = tmp / "tasks" / KEY
    for rel, text in rp.project_files(kernel).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return {"type": "command"}


def _repository_task(tmp: Path, kernel: str) -> dict[str, Any]:
    repo = tmp / "upstream"
    rp.make_repo(repo)
    sha = rp.commit(repo, {"kernels/scale.py": kernel, "VERSION": "v2\n"}, "the kernel")
    rp.commit(repo, {"kernels/scale.py": "raise SystemExit('a later commit')\n"}, "later")
    return {"type": "repository", "repository": {"url": str(repo), "commit": sha}}


def _image_task(tmp: Path, kernel: str) -> dict[str, Any]:
    client = rp.docker_client()
    if client is None:
        pytest.skip("no Docker daemon answers (start one with .ci/services/docker.sh)")
    tag = "good" if kernel == rp.GOOD_KERNEL else "wrong"
    client.api.import_image_from_data(rp.image_tar(kernel), repository="aka-verdict", tag=tag)
    ref = f"aka-verdict:{tag}"
    return {"type": "image", "image": {"ref": ref, "digest": client.images.get(ref).id,
                                       "path": "/opt/project"}}  # fmt: skip


KINDS = {"command": _command_task, "repository": _repository_task, "image": _image_task}


def _write(tmp: Path, kind: str, kernel: str) -> Path:
    root = tmp / "tasks"
    source = KINDS[kind](tmp, kernel)
    spec = rp.task_spec(source, python=sys.executable)
    folder = root / KEY
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    (folder / "workloads").mkdir(exist_ok=True)
    (folder / "workloads" / "shapes.json").write_text("[500, 2000]")
    return root


def _run_verdict(led: Ledger, tmp: Path, root: Path) -> ev.Scored:
    cfg = {"label": "verdict", "tasks": [KEY], "tasks_root": str(root),
           "arms": [{"name": "base", "agent": "noop"}], "device": "cpu",
           "timing": FAST.model_dump()}  # fmt: skip
    (tmp / "run.yaml").write_text(yaml.safe_dump(cfg))
    rid = run(led, tmp / "run.yaml")
    (scored,) = [
        e.payload
        for e in led.events(run_id=rid, types=["Scored"])
        if isinstance(e.payload, ev.Scored) and e.payload.purpose == "final"
    ]
    return scored


@pytest.mark.parametrize(
    "kind",
    ["command", "repository", pytest.param("image", marks=pytest.mark.docker)],
)
@pytest.mark.parametrize("kernel", [rp.GOOD_KERNEL, rp.WRONG_KERNEL], ids=["good", "wrong"])
def test_validate_run_and_api_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, kernel: str
) -> None:
    if kind == "image":  # lend this interpreter (and torch) to the minimal image
        paths = {"/usr", "/etc", sys.base_prefix, sys.prefix}
        monkeypatch.setenv("AKA_IMAGE_MOUNTS", ",".join(sorted(paths)))
    root = _write(tmp_path, kind, kernel)
    expected = kernel == rp.GOOD_KERNEL
    led = Ledger.open(tmp_path / "ledger", registry=REGISTRY)

    checked = validate_task(
        led, root / KEY, root=root, device="cpu", run_id="validate-verdict", timing=FAST
    )
    by_name = {c.name: c for c in checked.checks}
    assert by_name["schema"].detail.startswith(f"{kind}, {kind} kind"), by_name["schema"]
    assert (by_name["baseline_passes"].status == "pass") is expected, checked.checks
    assert checked.ok is expected, [c for c in checked.checks if c.status == "fail"]

    ran = _run_verdict(led, tmp_path, root)
    assert ran.compiled and ran.correct is expected, ran.error

    with Evaluator(led, tasks_root=root, device="cpu", timing=FAST, unsealed=True) as api:
        served = api.evaluate(KEY, {})
        assert served.compiled and served.correct is expected, served.error
        assert api.task_digest(KEY) == checked.task_tree  # the very tree validation judged
        fixed = api.evaluate(KEY, {"kernels/scale.py": rp.GOOD_KERNEL})
        assert fixed.correct, fixed.error  # a file under an editable folder is a candidate
    (started,) = [e for e in led.events(types=["RunStarted"]) if e.payload.label == "verdict"]
    assert isinstance(started.payload, ev.RunStarted)
    assert started.payload.tasks[KEY] == checked.task_tree
