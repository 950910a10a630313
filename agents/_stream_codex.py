"""The Codex ``exec --json`` stream (format notes in :mod:`aka_agents._streams`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aka.agent import AgentItem
from aka_agents._streams import StreamParser, as_str, clip, usage_numbers


class CodexParser(StreamParser):
    """Codex ``exec --json``; tokens come from the last ``turn.completed`` event.

    A turn's ``usage`` is the thread's running total, not the turn's own share, so the
    last one seen is the run's total (summing would count earlier turns twice).
    ``cached_input_tokens`` is a part of ``input_tokens`` (OpenAI usage), so ``tokens_in``
    is ``input_tokens``. Codex reports neither cost nor model in this stream.
    """

    _TOOLS = ("command_execution", "mcp_tool_call", "web_search")

    def __init__(self) -> None:
        super().__init__()
        self._started: set[str] = set()

    def on_event(self, event: dict[str, Any]) -> list[AgentItem]:
        kind = event.get("type")
        if kind == "thread.started":
            self.totals.session_id = as_str(event.get("thread_id"))
            return [AgentItem("log", "thread started", {"thread_id": event.get("thread_id")})]
        if kind == "turn.started":
            return []
        if kind in ("item.started", "item.updated", "item.completed"):
            return self._item(
                event.get("item") or {},
                done=kind == "item.completed",
                started=kind == "item.started",
            )
        if kind in ("turn.completed", "turn.failed"):
            return self._turn_end(event, failed=kind == "turn.failed")
        if kind == "error":
            message = str(event.get("message", ""))
            self.totals.error = message
            return [AgentItem("error", clip(message))]
        return super().on_event(event)

    def _item(self, item: Mapping[str, Any], *, done: bool, started: bool) -> list[AgentItem]:
        itype, iid = item.get("type") or item.get("item_type"), str(item.get("id", ""))
        items: list[AgentItem] = []
        if itype in self._TOOLS and (started or (done and iid not in self._started)):
            self._started.add(iid)
            items.append(self._tool_call(itype, item))
        if not done:
            return items
        if itype in ("agent_message", "assistant_message"):
            items.append(AgentItem("message", clip(str(item.get("text", "")))))
        elif itype == "reasoning":
            items.append(AgentItem("thinking", clip(str(item.get("text", "")))))
        elif itype in self._TOOLS:
            output = item.get("aggregated_output", item.get("result", item.get("output", "")))
            data = {"id": iid, "status": item.get("status"), "exit_code": item.get("exit_code")}
            items.append(
                AgentItem(
                    "tool_result",
                    clip(output if isinstance(output, str) else json.dumps(output)),
                    data,
                )
            )
        elif itype == "file_change":
            for change in item.get("changes") or []:
                path = str(change.get("path", ""))
                items.append(
                    AgentItem(
                        "file_edit",
                        path,
                        {"path": path, "change": change.get("kind"), "status": item.get("status")},
                    )
                )
        elif itype == "error":
            items.append(AgentItem("error", clip(str(item.get("message", "")))))
        elif itype == "todo_list":
            items.append(AgentItem("log", "todo list", {"items": clip(item.get("items") or [])}))
        return items

    @staticmethod
    def _tool_call(itype: str, item: Mapping[str, Any]) -> AgentItem:
        if itype == "command_execution":
            return AgentItem(
                "tool_call",
                "shell",
                {
                    "id": item.get("id"),
                    "name": "shell",
                    "input": {"command": clip(item.get("command", ""))},
                },
            )
        if itype == "mcp_tool_call":
            name = f"{item.get('server', '')}.{item.get('tool', '')}"
            return AgentItem(
                "tool_call",
                name,
                {"id": item.get("id"), "name": name, "input": clip(item.get("arguments") or {})},
            )
        return AgentItem(
            "tool_call",
            "web_search",
            {"id": item.get("id"), "name": "web_search", "input": {"query": item.get("query")}},
        )

    def _turn_end(self, event: Mapping[str, Any], *, failed: bool) -> list[AgentItem]:
        items = []
        if isinstance(event.get("usage"), Mapping):
            usage = usage_numbers(event["usage"])
            self.totals.tokens_in, self.totals.tokens_out = (
                usage["input_tokens"],
                usage["output_tokens"],
            )
            items.append(AgentItem("usage", "", {**usage, "source": "turn"}))
        if failed:
            error = event.get("error") or {}
            message = str(error.get("message", error) if isinstance(error, Mapping) else error)
            self.totals.is_error, self.totals.error = True, message
            items.append(AgentItem("error", clip(message)))
        return items
