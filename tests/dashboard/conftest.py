"""Fixtures for dashboard tests: one generated ledger, a server over it, a real browser.

The ledger is a quick CPU run of two arms (``noop`` and ``replay`` of a faster kernel)
over two copies of the fixture task, two repeats each; it is built once per session
because every test only reads it. Its label is hostile markup on purpose, so every page
has to escape it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from arena_helpers import write_config

from aka.dashboard import DashboardServer, make_server, serve_in_thread

FAST_KERNEL = (
    "import torch\n\n\ndef affine(x):\n"
    "    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))\n"
)
LABEL = 'ab<i>&"x'
"""Run label with markup in it: pages must show it as text."""

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass(frozen=True)
class Arena:
    """A generated ledger and what tests need to know about it."""

    root: Path
    ledger: Path
    run_id: str


_BUILT: dict[str, Arena] = {}


def build_arena(cli: Callable[..., Any], root: Path) -> Arena:
    """Run two arms over two fixture tasks, two repeats each, into ``root/ledger``."""
    tasks = root / "tasks"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "tasks", tasks)
    second = tasks / "torch" / "ops" / "affine2"
    shutil.copytree(tasks / "torch" / "ops" / "affine", second)
    spec = second / "task.yaml"
    spec.write_text(spec.read_text().replace("name: affine\n", "name: affine2\n"))
    fast = root / "fast"
    fast.mkdir()
    (fast / "kernel.py").write_text(FAST_KERNEL)
    cfg = write_config(
        root,
        tasks,
        arms=[
            {"name": "base", "agent": "noop"},
            {"name": "fast", "agent": "replay", "options": {"source": str(fast)}},
        ],
        tasks=["torch/ops/affine", "torch/ops/affine2"],
        repeats=2,
        label=LABEL,
        runner={"kind": "local", "workers": 2},
    )
    ledger = root / "ledger"
    res = cli("run", str(cfg), "--ledger", str(ledger))
    assert res.code == 0, res.err
    status = cli("status", "--ledger", str(ledger), "--format", "json")
    (run,) = json.loads(status.out)
    assert run["scored"] == 8, run
    return Arena(root, ledger, run["run_id"])


@pytest.fixture
def arena(cli: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory) -> Arena:
    """The shared generated ledger (read-only: copy it before appending)."""
    if "arena" not in _BUILT:
        keep = os.environ.get("AKA_TEST_ARENA")  # a folder reused between runs while developing
        root = Path(keep) if keep else tmp_path_factory.mktemp("arena")
        done = root / "arena.json"
        if keep and done.exists():
            _BUILT["arena"] = Arena(root, root / "ledger", json.loads(done.read_text())["run_id"])
        else:
            _BUILT["arena"] = build_arena(cli, root)
            done.write_text(json.dumps({"run_id": _BUILT["arena"].run_id}))
    return _BUILT["arena"]


@pytest.fixture
def serve() -> Iterator[Callable[[Path], DashboardServer]]:
    """Start dashboards on free ports; every one is shut down after the test."""
    started: list[DashboardServer] = []

    def start(ledger: Path) -> DashboardServer:
        server = make_server(ledger, port=0)
        serve_in_thread(server)
        started.append(server)
        return server

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (skipped, with the reason, when missing).

    Module-scoped: while Playwright's sync API is open its event loop counts as running,
    so ``asyncio.run`` in later test modules would fail.
    """
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is missing: pip install playwright")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page that records every URL it requests and every console error."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.requested = []
    pg.errors = []
    pg.on("request", lambda r: pg.requested.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on(
        "console",
        lambda m: pg.errors.append(m.text) if m.type == "error" else None,
    )
    yield pg
    context.close()
