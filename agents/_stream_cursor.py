"""The cursor-agent ``stream-json`` stream (format notes in :mod:`aka_agents._streams`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aka.agent import AgentItem, ItemKind
from aka_agents._streams import (
    SYSTEM_KEYS,
    StreamParser,
    as_str,
    clip,
    result_error,
    usage_numbers,
)


class CursorParser(StreamParser):
    """cursor-agent ``stream-json``; text deltas are joined into one item per segment.

    With ``--stream-partial-output`` each ``assistant`` event with a ``timestamp_ms`` (and
    no ``model_call_id``) carries a new piece of text, and each segment (the text before
    a tool call or the end of the turn) is closed by a recap event, without
    ``timestamp_ms`` or with ``model_call_id``, that repeats the whole segment. The
    pieces are buffered; the recap, when it comes, replaces them, so a segment becomes
    exactly one ``message`` item. ``thinking`` deltas are joined the same way until a
    ``completed`` event. Usage is read from the ``result`` event when the CLI includes it
    (older builds report none).
    """

    _EDITS = ("write", "edit", "delete", "strReplace", "searchReplace", "applyPatch")

    def __init__(self) -> None:
        super().__init__()
        self._buffer: list[str] = []
        self._buffer_kind: ItemKind = "message"

    def _flush(self) -> list[AgentItem]:
        if not self._buffer:
            return []
        text, self._buffer = "".join(self._buffer), []
        return [AgentItem(self._buffer_kind, clip(text))]

    def _buffered(self, kind: ItemKind, text: str) -> list[AgentItem]:
        out = self._flush() if kind != self._buffer_kind else []
        self._buffer_kind = kind
        self._buffer.append(text)
        return out

    def _assistant(self, event: Mapping[str, Any]) -> list[AgentItem]:
        content = (event.get("message") or {}).get("content") or []
        text = "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
        is_delta = "timestamp_ms" in event and "model_call_id" not in event
        if is_delta:
            return self._buffered("message", text)
        out = self._flush() if self._buffer_kind != "message" else []
        self._buffer = []  # the recap repeats the buffered deltas
        return [*out, AgentItem("message", clip(text))] if text else out

    def on_event(self, event: dict[str, Any]) -> list[AgentItem]:
        kind = event.get("type")
        if kind == "assistant":
            return self._assistant(event)
        if kind == "thinking":
            if event.get("subtype") == "completed":
                return self._flush()
            text = event.get("text")
            return self._buffered("thinking", str(text)) if text else []
        items = self._flush()
        if kind == "system":
            self.totals.model = as_str(event.get("model")) or self.totals.model
            self.totals.session_id = as_str(event.get("session_id")) or self.totals.session_id
            keep: dict[str, Any] = {k: event[k] for k in SYSTEM_KEYS if k in event}
            items.append(AgentItem("log", f"system {event.get('subtype', '')}".strip(), keep))
        elif kind == "user":
            pass  # the prompt echoed back
        elif kind == "tool_call":
            items.extend(self._tool(event))
        elif kind == "result":
            items.extend(self._result(event))
        elif kind == "error":
            items.append(AgentItem("error", clip(str(event.get("message") or event))))
        else:
            items.extend(super().on_event(event))
        return items

    def _tool(self, event: Mapping[str, Any]) -> list[AgentItem]:
        call = event.get("tool_call") or {}
        key = next(iter(call), "tool")
        body = call.get(key) or {}
        name = key.removesuffix("ToolCall")
        args = body.get("args") or {}
        data = {"id": event.get("call_id"), "name": name, "input": clip(args)}
        if event.get("subtype") == "started":
            items = [AgentItem("tool_call", name, data)]
            if name in self._EDITS and args.get("path"):
                items.append(
                    AgentItem("file_edit", str(args["path"]), {"path": args["path"], "tool": name})
                )
            return items
        result = body.get("result", {})
        ok = not (isinstance(result, Mapping) and "error" in result)
        return [
            AgentItem(
                "tool_result",
                clip(json.dumps(result, default=str)),
                {"id": event.get("call_id"), "name": name, "is_error": not ok},
            )
        ]

    def _result(self, event: Mapping[str, Any]) -> list[AgentItem]:
        t = self.totals
        t.final_text = event.get("result") if isinstance(event.get("result"), str) else None
        items = []
        if isinstance(event.get("usage"), Mapping):
            usage = usage_numbers(event["usage"])
            t.tokens_in = (
                usage["input_tokens"]
                + usage["cache_read_input_tokens"]
                + usage["cache_creation_input_tokens"]
            )
            t.tokens_out = usage["output_tokens"]
            items.append(AgentItem("usage", "", {**usage, "source": "result"}))
        return items + result_error(t, event)

    def finish(self) -> list[AgentItem]:
        return self._flush()
