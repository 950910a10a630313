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
_SYSTEM_KEYS = ("subtype", "model", "session_id", "cwd")
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


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def usage_numbers(usage: Mapping[str, Any]) -> dict[str, int]:
    """Token counts from a usage mapping in snake_case or camelCase, missing ones as 0."""

    def get(*names: str) -> int:
        return sum(_int(usage.get(n)) for n in names)

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
            self.totals.model = _str(event.get("model")) or self.totals.model
            self.totals.session_id = _str(event.get("session_id")) or self.totals.session_id
            keep: dict[str, Any] = {k: event[k] for k in _SYSTEM_KEYS if k in event}
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
        self.totals.model = self.totals.model or _str(message.get("model"))
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
        if event.get("is_error") or str(event.get("subtype", "success")) != "success":
            t.is_error = True
            t.error = f"{event.get('subtype', 'error')}: {t.final_text or ''}".strip(": ")
            items.append(AgentItem("error", clip(t.error)))
        return items

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
            self.totals.session_id = _str(event.get("thread_id"))
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
            self.totals.model = _str(event.get("model")) or self.totals.model
            self.totals.session_id = _str(event.get("session_id")) or self.totals.session_id
            keep: dict[str, Any] = {k: event[k] for k in _SYSTEM_KEYS if k in event}
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
        if event.get("is_error") or str(event.get("subtype", "success")) != "success":
            t.is_error = True
            t.error = f"{event.get('subtype', 'error')}: {t.final_text or ''}".strip(": ")
            items.append(AgentItem("error", clip(t.error)))
        return items

    def finish(self) -> list[AgentItem]:
        return self._flush()


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
            t.add_tokens(_int(data.get("tokens_in")), _int(data.get("tokens_out")))
            if isinstance(data.get("cost_usd"), int | float):
                t.cost_usd = (t.cost_usd or 0.0) + float(data["cost_usd"])
            t.model = str(data["model"]) if data.get("model") else t.model
        if kind == "error":
            self.totals.error = str(event.get("text", ""))
        return [AgentItem(cast(ItemKind, kind), clip(str(event.get("text", ""))), clip(data))]


PARSERS: dict[str, type[StreamParser]] = {
    "claude": ClaudeParser,
    "codex": CodexParser,
    "cursor": CursorParser,
    "lines": LinesParser,
}
