"""A file-backed stand-in for the orchestrator, usable from any process, container or job.

``<ledger>/standin/plan.json`` lists ``{"key": ..., "seconds": ...}``; ``execute`` appends
``start`` then ``scored`` lines to ``<ledger>/standin/events.log`` (O_APPEND, fsync), and
``pending`` is every planned key without a ``scored`` line. A killed worker leaves a
``start`` with no ``scored``, which the next plan retries as the next try, like the
orchestrator's fold does.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Plan:
    key: str
    try_no: int
    seconds: float


def setup(ledger: Path, durations: dict[str, float]) -> None:
    d = Path(ledger) / "standin"
    d.mkdir(parents=True, exist_ok=True)
    (d / "plan.json").write_text(
        json.dumps([{"key": k, "seconds": s} for k, s in durations.items()])
    )
    (d / "events.log").touch()


def read_events(ledger: Path) -> list[tuple[str, str, str, int]]:
    """(kind, key, worker, try) per line."""
    out = []
    for line in (Path(ledger) / "standin" / "events.log").read_text().splitlines():
        kind, key, worker, try_no = line.split("\t")
        out.append((kind, key, worker, int(try_no)))
    return out


class StandinSource:
    target_device = "cpu"  # what a run records; preflight then needs no torch import

    def __init__(self, ledger: Path, run_id: str, worker_id: str):
        self.dir = Path(ledger) / "standin"
        self.plan = json.loads((self.dir / "plan.json").read_text())

    def _append(self, *fields: object) -> None:
        fd = os.open(self.dir / "events.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, ("\t".join(map(str, fields)) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def pending(self) -> list[Plan]:
        events = read_events(self.dir.parent)
        scored = {e[1] for e in events if e[0] == "scored"}
        starts = Counter(e[1] for e in events if e[0] == "start")
        return [
            Plan(p["key"], starts[p["key"]] + 1, p["seconds"])
            for p in self.plan
            if p["key"] not in scored
        ]

    def execute(self, plan: Plan, *, device: str, worker_id: str) -> None:
        self._append("start", plan.key, worker_id, plan.try_no)
        time.sleep(plan.seconds)
        self._append("scored", plan.key, worker_id, plan.try_no)


def make(ledger: Path, run_id: str, worker_id: str) -> StandinSource:
    """The factory ``aka worker --source runners_standin:make`` loads; notes the GPU pinning."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
    (Path(ledger) / "standin" / f"env-{worker_id}").write_text(visible)
    return StandinSource(ledger, run_id, worker_id)
