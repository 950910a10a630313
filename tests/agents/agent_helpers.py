"""Helpers for agent tests: fake CLIs on PATH, a collecting sink, process liveness checks."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from aka.agent import AgentItem, AgentRequest, AgentSettings

FAKES = Path(__file__).parent / "fakes"
CLIS = ("claude", "codex", "cursor-agent", "mini")


class Collect:
    """A sink that keeps every item."""

    def __init__(self) -> None:
        self.items: list[AgentItem] = []

    def emit(self, item: AgentItem) -> None:
        self.items.append(item)

    def of(self, kind: str) -> list[AgentItem]:
        return [i for i in self.items if i.kind == kind]

    def ended(self) -> dict:
        return dict(next(i for i in self.items if i.text == "process ended").data)


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake CLIs, with this interpreter as their shebang, first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in CLIS:
        body = (FAKES / name).read_text().split("\n", 1)[1]
        body = body.replace("os.path.dirname(os.path.realpath(__file__))", repr(str(FAKES)))
        path = bin_dir / name
        path.write_text(f"#!{sys.executable}\n{body}")
        path.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return bin_dir


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel.py").write_text("BLOCK_SIZE = 128\n")
    return ws


def make_request(
    workspace: Path, env: dict[str, str] | None = None, **settings: object
) -> AgentRequest:
    options = dict(settings.pop("options", {}) or {})  # type: ignore[call-overload]
    return AgentRequest(
        workspace=workspace,
        prompt="Make softmax faster.",
        settings=AgentSettings(options=options, **settings),  # type: ignore[arg-type]
        env=env or {},
    )


def alive(pid: int) -> bool:
    """Running (a zombie awaiting its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def wait_gone(pids: list[int], within: float = 3.0) -> list[int]:
    """The pids still running after ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]
