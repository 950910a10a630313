"""mini-swe-agent, an optional extra, for any model LiteLLM reaches (local servers too).

Install with ``pip install mini-swe-agent`` (or ``pip install aka[mini-swe]``). The agent
runs its ``mini`` CLI in the workspace, so the timeout and the process-tree cleanup are
the same as for every CLI agent; the package is never imported here::

    mini --yolo --exit-immediately --task PROMPT --output TRAJECTORY.json
         [--model M] [--cost-limit options.cost_limit] [options.args ...]

``model`` is a LiteLLM model name (``anthropic/claude-sonnet-4-5``, ``openai/gpt-5``,
``openai/<name>`` for a local OpenAI-compatible server with ``options.api_base``). stdout is
kept as log items; after the run the trajectory file gives the messages, the command
outputs, the cost and the token counts.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from aka.agent import AgentItem, AgentOutcome, AgentRequest, AgentSink, register_agent
from aka_agents._options import CliOptions
from aka_agents._process import AgentCheck, extra_args, launch
from aka_agents._streams import LinesParser, StreamTotals, clip, usage_numbers

INSTALL = "pip install mini-swe-agent"


def mini_argv(exe: str, request: AgentRequest, trajectory: Path) -> tuple[list[str], list[str]]:
    """The command line for one run, and notes on settings it ignores."""
    s = request.settings
    argv = [
        exe,
        "--yolo",
        "--exit-immediately",
        "--task",
        request.prompt,
        "--output",
        str(trajectory),
    ]
    if s.model:
        argv += ["--model", s.model]
    if s.options.get("cost_limit") is not None:
        argv += ["--cost-limit", str(s.options["cost_limit"])]
    notes = []
    if s.effort:
        notes.append(
            f"effort={s.effort!r} ignored: pass model options through a mini-swe-agent config"
        )
    if s.max_iterations is not None:
        notes.append(
            f"max_iterations={s.max_iterations} ignored: set step_limit in a mini-swe-agent config"
        )
    argv += extra_args(s)
    return argv, notes


def trajectory_items(traj: Mapping[str, Any]) -> tuple[list[AgentItem], StreamTotals]:
    """Items and totals from a mini-swe-agent trajectory file's content."""
    totals = StreamTotals()
    items: list[AgentItem] = []
    for i, msg in enumerate(traj.get("messages") or []):
        role, content = msg.get("role"), msg.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if role == "assistant":
            items.append(AgentItem("message", clip(text)))
            usage = ((msg.get("extra") or {}).get("response") or {}).get("usage")
            if isinstance(usage, Mapping):
                u = usage_numbers(usage)
                totals.add_tokens(u["input_tokens"], u["output_tokens"])
        elif role == "user" and i > 1:  # after the task: command outputs fed back
            items.append(AgentItem("tool_result", clip(text)))
    info = traj.get("info") or {}
    stats = info.get("model_stats") or {}
    if isinstance(stats.get("instance_cost"), int | float):
        totals.cost_usd = float(stats["instance_cost"])
    model = ((info.get("config") or {}).get("model") or {}).get("model_name")
    totals.model = str(model) if model else None
    exit_status = info.get("exit_status")
    if exit_status and exit_status not in ("Submitted", "submitted"):
        totals.error = f"exit status {exit_status}"
    items.append(
        AgentItem(
            "usage",
            "",
            {
                "tokens_in": totals.tokens_in,
                "tokens_out": totals.tokens_out,
                "cost_usd": totals.cost_usd,
                "api_calls": stats.get("api_calls"),
                "exit_status": exit_status,
            },
        )
    )
    return items, totals


def _with_env(request: AgentRequest) -> AgentRequest:
    options = request.settings.options
    env = {"MSWEA_CONFIGURED": "true", **request.env}  # skip the first-run setup wizard
    if options.get("api_base"):
        env.setdefault("OPENAI_API_BASE", str(options["api_base"]))
        env.setdefault("OPENAI_BASE_URL", str(options["api_base"]))
        env.setdefault("MSWEA_COST_TRACKING", "ignore_errors")  # local models have no price
    return dataclasses.replace(request, env=env)


class MiniSweOptions(CliOptions):
    """mini-swe-agent's options: the common CLI ones, a cost limit and a model server."""

    cost_limit: float | None = Field(
        default=None, ge=0, description="passed as --cost-limit (USD per attempt)"
    )
    api_base: str | None = Field(
        default=None, description="an OpenAI-compatible server's URL (a local model)"
    )


@register_agent("mini_swe")
class MiniSweAgent:
    """mini-swe-agent through its ``mini`` CLI."""

    name: ClassVar[str] = "mini_swe"
    Options: ClassVar[type[MiniSweOptions]] = MiniSweOptions

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        """Run ``mini`` in the workspace, then read its trajectory for usage and cost."""
        with tempfile.TemporaryDirectory(prefix="aka-mini-") as tmp:
            trajectory = Path(tmp) / "trajectory.json"
            outcome = launch(
                _with_env(request),
                sink,
                executable="mini",
                install=INSTALL,
                parser=LinesParser(),
                build=lambda exe, req: mini_argv(exe, req, trajectory),
            )
            try:
                traj = json.loads(trajectory.read_text())
            except (OSError, ValueError):
                return outcome
        items, totals = trajectory_items(traj)
        for item in items:
            sink.emit(item)
        return dataclasses.replace(
            outcome,
            model=totals.model or outcome.model,
            tokens_in=totals.tokens_in,
            tokens_out=totals.tokens_out,
            cost_usd=totals.cost_usd,
            version=outcome.version or _package_version(),
        )

    def check(self) -> AgentCheck:
        """Package installed and ``mini`` on PATH; model keys are LiteLLM's, read at run time."""
        if importlib.util.find_spec("minisweagent") is None and shutil.which("mini") is None:
            return AgentCheck(
                self.name, installed=False, message=f"mini-swe-agent is not installed: {INSTALL}"
            )
        return AgentCheck(
            self.name, True, _package_version(), None, "model keys are read by LiteLLM when it runs"
        )


def _package_version() -> str | None:
    try:
        return importlib.metadata.version("mini-swe-agent")
    except importlib.metadata.PackageNotFoundError:
        return None
