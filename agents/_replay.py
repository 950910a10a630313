"""The ``replay`` agent: applies a kept candidate or an outside solution.

How a user re-scores a candidate: ``options.source`` names a directory whose files
replace the workspace's (``aka audit ATTEMPT --export DIR`` writes one), or
``options.patch`` names a unified diff applied with ``patch -p1``. Paths in options are
relative to the directory ``aka`` was started in.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

from pydantic import Field, model_validator

from aka.agent import (
    AgentItem,
    AgentOptions,
    AgentOutcome,
    AgentRequest,
    AgentSink,
    register_agent,
)


class ReplayOptions(AgentOptions):
    """What to replay: a directory of files, a diff, or both (files first)."""

    source: str | None = Field(
        default=None, description="a directory whose files replace the workspace's"
    )
    patch: str | None = Field(default=None, description="a unified diff applied with patch -p1")

    @model_validator(mode="after")
    def _something(self) -> ReplayOptions:
        if not self.source and not self.patch:
            raise ValueError("replay needs options.source (a directory) or options.patch")
        return self


@register_agent("replay")
class ReplayAgent:
    """Copies files or applies a patch; never edits anything else."""

    name = "replay"
    Options: ClassVar[type[ReplayOptions]] = ReplayOptions

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        """Apply ``options.source`` (a directory) and/or ``options.patch`` (a diff file)."""
        opts = request.settings.options
        source, patch = opts.get("source"), opts.get("patch")
        if not source and not patch:
            return AgentOutcome(
                status="error",
                error="replay needs options.source (a directory) or options.patch (a diff file)",
            )
        if source:
            src = Path(str(source)).resolve()
            if not src.is_dir():
                return AgentOutcome(
                    status="error", error=f"options.source: {src} is not a directory"
                )
            for rel in request.editable:
                if (src / rel).is_file():
                    shutil.copy2(src / rel, request.workspace / rel)
                    sink.emit(AgentItem(kind="file_edit", text=rel, data={"from": str(src / rel)}))
        if patch:
            diff = Path(str(patch)).resolve()
            if not diff.is_file():
                return AgentOutcome(status="error", error=f"options.patch: {diff} does not exist")
            proc = subprocess.run(
                ["patch", "-p1", "--batch", "-i", str(diff)],
                cwd=request.workspace,
                capture_output=True,
                text=True,
            )
            sink.emit(AgentItem(kind="log", text=proc.stdout + proc.stderr))
            if proc.returncode != 0:
                return AgentOutcome(
                    status="error",
                    exit_code=proc.returncode,
                    error=f"patch failed: {proc.stderr.strip()[:500]}",
                )
        return AgentOutcome(status="ok", exit_code=0, tokens_in=0, tokens_out=0, cost_usd=0.0)
