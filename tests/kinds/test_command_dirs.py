"""Invariant: the evaluation directory takes exactly the editable paths from the candidate."""

from __future__ import annotations

import tempfile
from pathlib import Path

import repo_project as rp
from hypothesis import given, settings
from hypothesis import strategies as st

from aka.config import TimingSettings
from aka.eval import EvalRequest
from aka.events import REGISTRY
from aka.kind_specs import SOURCE_LOCK
from aka.kinds import kind_of
from aka.tasks import load_task
from aka_ledger import Ledger

NAMES = st.sampled_from(["kernels/scale.py", "kernels/new.py", "check.py", "bench.py", "x/y.py"])


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@settings(max_examples=25, deadline=None)
@given(edits=st.dictionaries(NAMES, st.binary(max_size=20), max_size=5))
def test_only_editable_paths_come_from_the_candidate(edits: dict[str, bytes]) -> None:
    led = Ledger.memory(registry=REGISTRY)
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp) / "stage"
        folder = rp.write_task(
            stage.parent, "stage", rp.task_spec({"image": {"ref": "x", "path": "/p"}})
        )
        for rel, text in rp.project_files().items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        (folder / SOURCE_LOCK).write_text("{}")
        task = load_task(folder)
        ws = Path(tmp) / "ws"
        ws.mkdir()
        for rel, data in edits.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_bytes(data)
        req = EvalRequest(
            task=task,
            task_tree=led.cas.snapshot(folder),
            candidate=led.cas.snapshot(ws),  # everything the agent wrote, editable or not
            harness="b3:" + "0" * 64,
            device="cpu",
            policy="default",
            timing=TimingSettings(),
        )
        dirs = kind_of(task).lay_out(led, req, Path(tmp) / "eval")
        base, cand = _files(dirs["base"]), _files(dirs["cand"])
        outside = {k: v for k, v in cand.items() if not k.startswith("kernels/")}
        assert outside == {k: v for k, v in base.items() if not k.startswith("kernels/")}
        assert {k: v for k, v in cand.items() if k.startswith("kernels/")} == {
            k: v for k, v in edits.items() if k.startswith("kernels/")
        }
