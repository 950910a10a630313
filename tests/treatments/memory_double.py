"""A test-double agent with a memory: reads ``note.txt`` from it, then appends its task.

Importing this module registers it as ``memory_double``. When ``MEMORY_DOUBLE_KILL``
names an existing file and the memory already holds a note, it deletes the file and
ends the whole process at once (``os._exit``), like a crash or a kill between tasks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from aka.agent import AgentItem, AgentOutcome, AgentRequest, AgentSink, register_agent


@register_agent("memory_double")
class MemoryDouble:
    """Reads the note left by earlier attempts and adds a line for this one."""

    name: ClassVar[str] = "memory_double"

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        assert request.memory_dir is not None and request.memory_dir.is_dir()
        note = request.memory_dir / "note.txt"
        seen = note.read_text() if note.exists() else ""
        sink.emit(AgentItem("message", f"seen: {seen!r}"))
        kill = os.environ.get("MEMORY_DOUBLE_KILL")
        if seen and kill and Path(kill).exists():
            Path(kill).unlink()
            os._exit(9)
        note.write_text(seen + request.task_name + "\n")
        return AgentOutcome(status="ok")
