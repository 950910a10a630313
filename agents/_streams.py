"""Parsers for agent CLIs' JSON-lines streams, turning events into :class:`AgentItem` values.

Each parser takes one stdout line at a time (:meth:`StreamParser.feed`) and returns the
items it yields, while accumulating the run's totals (model, tokens, cost, errors) in
:class:`StreamTotals`. A line that is not JSON, or JSON of a shape the parser does not
know, becomes a ``log`` item; nothing a CLI prints can stop the parse.

Formats (as documented by each CLI; the real CLIs were not run where this was tested):

- Claude Code ``--output-format stream-json``: ``system``/``init`` (model, session),
  ``assistant`` messages with content blocks ``text``/``thinking``/``tool_use``, ``user``
  messages with ``tool_result`` blocks, ``stream_event`` partial deltas (skipped: the
  full message follows), and a final ``result`` with ``usage`` and ``total_cost_usd``.
- Codex ``exec --json``: ``thread.started``, ``turn.started``, ``item.started`` /
  ``item.updated`` / ``item.completed`` with items ``agent_message``, ``reasoning``,
  ``command_execution``, ``file_change``, ``mcp_tool_call``, ``web_search``,
  ``todo_list``, ``error``; ``turn.completed`` with ``usage``; ``turn.failed``; ``error``.
- cursor-agent ``--output-format stream-json``: Claude-like ``system``, ``user``,
  ``assistant`` (text deltas with ``--stream-partial-output``), ``thinking`` deltas,
  ``tool_call`` ``started``/``completed`` and a final ``result``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from aka.agent import AgentItem, ItemKind

TEXT_LIMIT = 8192  # characters of free text kept in one item (the transcript keeps all)
SYSTEM_KEYS = ("subtype", "model", "session_id", "cwd")
_EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}


def clip(value: Any, limit: int = TEXT_LIMIT) -> Any:
    """``value`` with every string inside it cut to ``limit`` characters."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"... [{len(value) - limit} more]"
    if isinstance(value, Mapping):
        return {str(k): clip(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clip(v, limit) for v in value]
    return value


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def as_int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def usage_numbers(usage: Mapping[str, Any]) -> dict[str, int]:
    """Token counts from a usage mapping in snake_case or camelCase, missing ones as 0."""

    def get(*names: str) -> int:
        return sum(as_int(usage.get(n)) for n in names)

    return {
        "input_tokens": get("input_tokens", "inputTokens", "prompt_tokens"),
        "cache_creation_input_tokens": get(
            "cache_creation_input_tokens", "cacheWriteTokens", "cacheCreationInputTokens"
        ),
        "cache_read_input_tokens": get(
            "cache_read_input_tokens", "cacheReadTokens", "cacheReadInputTokens"
        ),
        "cached_input_tokens": get("cached_input_tokens", "cachedInputTokens"),
        "output_tokens": get("output_tokens", "outputTokens", "completion_tokens"),
    }


@dataclass
class StreamTotals:
    """What a stream said about the whole run; None where it said nothing."""

    model: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    session_id: str | None = None
    final_text: str | None = None
    is_error: bool = False
    error: str | None = None
    malformed_lines: int = 0

    def add_tokens(self, tokens_in: int, tokens_out: int) -> None:
        self.tokens_in = (self.tokens_in or 0) + tokens_in
        self.tokens_out = (self.tokens_out or 0) + tokens_out


def result_error(totals: StreamTotals, event: Mapping[str, Any]) -> list[AgentItem]:
    """The error a final ``result`` event reports (Claude Code and cursor-agent share it)."""
    if not event.get("is_error") and str(event.get("subtype", "success")) == "success":
        return []
    totals.is_error = True
    totals.error = f"{event.get('subtype', 'error')}: {totals.final_text or ''}".strip(": ")
    return [AgentItem("error", clip(totals.error))]


class StreamParser:
    """Base parser: JSON decoding and the survival of bad lines; subclasses map events."""

    def __init__(self) -> None:
        self.totals = StreamTotals()

    def feed(self, line: str) -> list[AgentItem]:
        """Items for one stdout line (possibly none)."""
        text = line.strip()
        if not text:
            return []
        try:
            obj = json.loads(text)
        except ValueError as exc:
            if text.startswith(("{", "[")):
                self.totals.malformed_lines += 1
                return [AgentItem("log", clip(text, 2048), {"malformed": True, "reason": str(exc)})]
            return [AgentItem("log", clip(text))]
        if not isinstance(obj, dict):
            return [AgentItem("log", clip(text))]
        try:
            items = self.on_event(obj)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return [AgentItem("log", clip(text, 2048), {"unparsed": True, "reason": repr(exc)})]
        # a field of an unexpected type must not leak into an item's text
        return [i if isinstance(i.text, str) else replace(i, text=str(i.text)) for i in items]

    def on_event(self, event: dict[str, Any]) -> list[AgentItem]:
        """Items for one decoded JSON object; the base keeps it as a log item."""
        return [AgentItem("log", "", clip(event))]

    def finish(self) -> list[AgentItem]:
        """Items still buffered at the end of the stream."""
        return []


class ClaudeParser(StreamParser):
    """Claude Code ``stream-json``; totals come from the final ``result`` event.

    ``tokens_in`` counts every input token the model read: ``input_tokens`` plus cache
    writes and cache reads (the usage item keeps the breakdown). If the run ends without a
    ``result`` (timeout), totals are summed over the assistant messages seen, by message id.
    """

    def __init__(self) -> None:
        super().__init__()
        self._message_usage: dict[str, dict[str, int]] = {}
        self._has_result = False

    def on_event(self, event: dict[str, Any]) -> list[AgentItem]:
        kind = event.get("type")
        if kind == "system":
            self.totals.model = as_str(event.get("model")) or self.totals.model
            self.totals.session_id = as_str(event.get("session_id")) or self.totals.session_id
            keep: dict[str, Any] = {k: event[k] for k in SYSTEM_KEYS if k in event}
            return [AgentItem("log", f"system {event.get('subtype', '')}".strip(), keep)]
        if kind == "assistant":
            return self._assistant(event.get("message") or {})
        if kind == "user":
            return self._user(event.get("message") or {})
        if kind == "stream_event":
            return []  # partial deltas; the complete assistant message follows
        if kind == "result":
            return self._result(event)
        if kind == "error":
            return [
                AgentItem("error", clip(str(event.get("message") or event.get("error") or event)))
            ]
        return super().on_event(event)

    def _assistant(self, message: Mapping[str, Any]) -> list[AgentItem]:
        self.totals.model = self.totals.model or as_str(message.get("model"))
        if isinstance(message.get("usage"), Mapping):
            self._message_usage[str(message.get("id", len(self._message_usage)))] = usage_numbers(
                message["usage"]
            )
        items: list[AgentItem] = []
        for block in message.get("content") or []:
            btype = block.get("type")
            if btype == "text":
                items.append(AgentItem("message", clip(block.get("text", ""))))
            elif btype == "thinking":
                items.append(AgentItem("thinking", clip(block.get("thinking", ""))))
            elif btype == "tool_use":
                name, args = block.get("name", ""), block.get("input") or {}
                data = {"id": block.get("id"), "name": name, "input": clip(args)}
                items.append(AgentItem("tool_call", name, data))
                path = args.get("file_path") or args.get("notebook_path")
                if name in _EDIT_TOOLS and path:
                    items.append(AgentItem("file_edit", str(path), {"path": path, "tool": name}))
        return items

    def _user(self, message: Mapping[str, Any]) -> list[AgentItem]:
        content = message.get("content")
        if not isinstance(content, list):
            return []
        items = []
        for block in content:
            if block.get("type") != "tool_result":
                continue
            body = block.get("content")
            if isinstance(body, list):
                body = "\n".join(str(b.get("text", "")) for b in body if isinstance(b, Mapping))
            data = {
                "tool_use_id": block.get("tool_use_id"),
                "is_error": bool(block.get("is_error")),
            }
            items.append(AgentItem("tool_result", clip(str(body or "")), data))
        return items

    def _result(self, event: Mapping[str, Any]) -> list[AgentItem]:
        self._has_result = True
        t = self.totals
        usage = usage_numbers(event.get("usage") or {})
        t.tokens_in = (
            usage["input_tokens"]
            + usage["cache_creation_input_tokens"]
            + usage["cache_read_input_tokens"]
        )
        t.tokens_out = usage["output_tokens"]
        cost = event.get("total_cost_usd", event.get("cost_usd"))
        t.cost_usd = float(cost) if isinstance(cost, int | float) else t.cost_usd
        t.final_text = event.get("result") if isinstance(event.get("result"), str) else None
        model_usage = event.get("modelUsage")
        if isinstance(model_usage, Mapping) and model_usage and not t.model:
            t.model = next(iter(model_usage))
        data = {
            **usage,
            "cost_usd": t.cost_usd,
            "num_turns": event.get("num_turns"),
            "source": "result",
        }
        items = [AgentItem("usage", "", data)]
        return items + result_error(t, event)

    def finish(self) -> list[AgentItem]:
        if self._has_result or not self._message_usage:
            return []
        ins = sum(
            u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
            for u in self._message_usage.values()
        )
        outs = sum(u["output_tokens"] for u in self._message_usage.values())
        self.totals.add_tokens(ins, outs)
        return [
            AgentItem(
                "usage", "", {"input_tokens": ins, "output_tokens": outs, "source": "messages"}
            )
        ]


class LinesParser(StreamParser):
    """The generic format of the ``command`` agent: JSON lines, else plain log lines.

    A JSON object with a ``kind`` that is an item kind becomes that item (``text`` and
    ``data`` taken as given); a ``usage`` item's ``data`` may set ``tokens_in``,
    ``tokens_out``, ``cost_usd`` and ``model`` for the outcome (summed over items). Any
    other JSON object is kept as a ``log`` item with the object as data.
    """

    _KINDS = frozenset(ItemKind.__args__)  # type: ignore[attr-defined]

    def on_event(self, event: dict[str, Any]) -> list[AgentItem]:
        kind = event.get("kind")
        if kind not in self._KINDS:
            return super().on_event(event)
        raw = event.get("data")
        data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        if kind == "usage":
            t = self.totals
            t.add_tokens(as_int(data.get("tokens_in")), as_int(data.get("tokens_out")))
            if isinstance(data.get("cost_usd"), int | float):
                t.cost_usd = (t.cost_usd or 0.0) + float(data["cost_usd"])
            t.model = str(data["model"]) if data.get("model") else t.model
        if kind == "error":
            self.totals.error = str(event.get("text", ""))
        return [AgentItem(cast(ItemKind, kind), clip(str(event.get("text", ""))), clip(data))]
