"""Adding an agent, done once as docs/architecture.md says.

An agent is one module (a class with ``@register_agent``, an ``Options`` model and
``run``) and one line in the ``aka.agents`` entry points. The fixture writes such a
module outside the repository and gives it exactly that line (an entry point, as
``pyproject.toml`` declares the built-in ones), and the agent then goes through
``aka run`` on a fixture task like the built-ins: its options are checked at run start,
its stream is recorded, its edit is scored, and ``aka agents list`` names it.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from arena_helpers import write_config

from aka.agent import unregister_agent
from aka.events import REGISTRY
from aka_ledger import Ledger

FAST_KERNEL = "import torch\n\n\ndef affine(x):\n    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))\n"

MODULE = '''"""The ``rewrite`` agent: writes the arm's kernel text into the task's first editable file."""

from typing import ClassVar

from pydantic import Field

from aka.agent import AgentItem, AgentOptions, AgentOutcome, AgentRequest, AgentSink, register_agent


class RewriteOptions(AgentOptions):
    """What to write."""

    kernel: str = Field(description="the new text of the entry file")


@register_agent("rewrite")
class RewriteAgent:
    """Writes options.kernel over the entry file and nothing else."""

    Options: ClassVar[type[RewriteOptions]] = RewriteOptions

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        opts = RewriteOptions.model_validate(dict(request.settings.options))
        target = request.editable[0]
        (request.workspace / target).write_text(opts.kernel)
        sink.emit(AgentItem(kind="file_edit", text=target))
        return AgentOutcome(status="ok", exit_code=0, tokens_in=0, tokens_out=0, cost_usd=0.0)
'''


@pytest.fixture
def rewrite_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The module and its one entry-point line (``rewrite = "aka_rewrite_agent"``)."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "aka_rewrite_agent.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(plugin))
    line = importlib.metadata.EntryPoint("rewrite", "aka_rewrite_agent", "aka.agents")
    installed = importlib.metadata.entry_points

    def entry_points(**select: str) -> importlib.metadata.EntryPoints:
        found = installed(**select)
        ours = importlib.metadata.EntryPoints([line]).select(**select)
        return importlib.metadata.EntryPoints([*found, *ours])

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    yield "rewrite"
    unregister_agent("rewrite")
    sys.modules.pop("aka_rewrite_agent", None)


def _run(
    cli: Callable[..., Any], tmp: Path, tasks_root: Path, ledger: Path, options: dict[str, str]
) -> Any:
    arms = [{"name": "mine", "agent": "rewrite", "options": options}]
    return cli("run", str(write_config(tmp, tasks_root, arms=arms)), "--ledger", str(ledger))


def test_an_agent_without_its_entry_point_is_unknown(cli, tmp_path, tasks_root, ledger_dir) -> None:
    res = _run(cli, tmp_path, tasks_root, ledger_dir, {"kernel": FAST_KERNEL})
    assert res.code == 2
    assert "field 'agent'" in res.err and "unknown agent 'rewrite'" in res.err


@pytest.mark.usefixtures("rewrite_agent")
def test_a_registered_agent_runs_through_aka_run(cli, tmp_path, tasks_root, ledger_dir) -> None:
    listed = cli("agents", "list", "--format", "json")
    (row,) = [r for r in json.loads(listed.out) if r["name"] == "rewrite"]
    assert row["module"] == "aka_rewrite_agent"

    res = _run(cli, tmp_path, tasks_root, ledger_dir, {"kernel": FAST_KERNEL})
    assert res.code == 0, res.err
    report = cli("report", "--ledger", str(ledger_dir), "--format", "json")
    (scored,) = json.loads(report.out)
    assert scored["arm"] == "mine" and scored["correct"] is True
    with Ledger.open(ledger_dir, registry=REGISTRY) as led:
        (started,) = [e.payload for e in led.events(types=["AgentStarted"])]
        items = [i for e in led.events(types=["AgentOutput"]) for i in e.payload.items]
    assert started.agent == "rewrite"
    assert [(i.kind, i.text) for i in items] == [("file_edit", "kernel.py")]


@pytest.mark.usefixtures("rewrite_agent")
def test_a_registered_agent_s_options_are_checked_at_run_start(
    cli, tmp_path, tasks_root, ledger_dir
) -> None:
    res = _run(cli, tmp_path, tasks_root, ledger_dir, {"kernel": FAST_KERNEL, "kernal": "x"})
    assert res.code == 2
    assert "agent 'rewrite' has no option 'kernal'" in res.err and "it takes kernel" in res.err
