"""Stream parsers: documented event shapes map to items, and no line can break a parse."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aka_agents._parsers import PARSERS
from aka_agents._stream_codex import CodexParser
from aka_agents._stream_cursor import CursorParser
from aka_agents._streams import ClaudeParser, LinesParser, clip

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
event_types = st.sampled_from(
    [
        "system",
        "assistant",
        "user",
        "result",
        "stream_event",
        "error",
        "thread.started",
        "item.started",
        "item.completed",
        "turn.completed",
        "turn.failed",
        "tool_call",
        "thinking",
        "usage",
    ]
)
blocks = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "thinking", "tool_use", "tool_result"])},
        optional={k: json_values for k in ("text", "thinking", "name", "input", "content", "id")},
    ),
    max_size=3,
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "content": blocks | json_values,
        "usage": json_values,
        "id": json_values,
        "model": json_values,
    },
)
events = st.fixed_dictionaries(
    {"type": event_types},
    optional={
        "message": messages | json_values,
        "item": st.fixed_dictionaries(
            {
                "type": st.sampled_from(
                    [
                        "agent_message",
                        "reasoning",
                        "command_execution",
                        "file_change",
                        "mcp_tool_call",
                        "web_search",
                        "todo_list",
                        "error",
                    ]
                )
            },
            optional={
                k: json_values
                for k in ("id", "text", "command", "aggregated_output", "changes", "exit_code")
            },
        )
        | json_values,
        "usage": json_values,
        "tool_call": json_values,
        "subtype": json_values,
        "kind": event_types,
        "data": json_values,
        "text": json_values,
        "is_error": json_values,
        "total_cost_usd": json_values,
        "model": json_values,
    },
)
lines = st.one_of(st.text(max_size=200), events.map(json.dumps), json_values.map(json.dumps))


@settings(max_examples=120, deadline=None)
@given(name=st.sampled_from(sorted(PARSERS)), batch=st.lists(lines, max_size=12))
def test_no_line_breaks_a_parser(name: str, batch: list[str]) -> None:
    parser = PARSERS[name]()
    for line in batch:
        for item in parser.feed(line):
            assert isinstance(item.text, str)
            assert item.kind in {
                "message",
                "thinking",
                "tool_call",
                "tool_result",
                "file_edit",
                "usage",
                "log",
                "error",
            }
    parser.finish()
    t = parser.totals
    assert t.tokens_in is None or isinstance(t.tokens_in, int)
    assert t.cost_usd is None or isinstance(t.cost_usd, float)
    assert t.model is None or isinstance(t.model, str)
    assert t.session_id is None or isinstance(t.session_id, str)


@given(st.text(max_size=300), st.integers(min_value=1, max_value=100))
def test_clip_bounds_every_string(text: str, limit: int) -> None:
    out = clip({"a": [text, {"b": text}]}, limit)
    for s in (out["a"][0], out["a"][1]["b"]):
        assert (
            s == text if len(text) <= limit else s.startswith(text[:limit]) and s.endswith("more]")
        )


def test_claude_error_result_sets_error() -> None:
    p = ClaudeParser()
    items = p.feed(
        json.dumps(
            {
                "type": "result",
                "subtype": "error_max_turns",
                "is_error": True,
                "usage": {"input_tokens": 5, "output_tokens": 2},
                "total_cost_usd": 0.5,
            }
        )
    )
    assert [i.kind for i in items] == ["usage", "error"]
    assert p.totals.is_error and p.totals.error is not None and "error_max_turns" in p.totals.error
    assert (p.totals.tokens_in, p.totals.tokens_out, p.totals.cost_usd) == (5, 2, 0.5)


def test_claude_without_result_sums_message_usage_once_per_message() -> None:
    p = ClaudeParser()
    usage = {"input_tokens": 3, "cache_read_input_tokens": 7, "output_tokens": 1}
    msg: dict[str, Any] = {
        "id": "m1",
        "content": [],
        "usage": usage,
    }
    p.feed(json.dumps({"type": "assistant", "message": msg}))
    p.feed(
        json.dumps(
            {"type": "assistant", "message": {**msg, "usage": {**usage, "output_tokens": 4}}}
        )
    )
    p.feed(
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "id": "m2",
                    "content": [],
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                },
            }
        )
    )
    (summed,) = p.finish()
    assert summed.data["source"] == "messages"
    assert (p.totals.tokens_in, p.totals.tokens_out) == (11, 5)


def test_codex_failed_turn_is_an_error_with_usage() -> None:
    p = CodexParser()
    items = p.feed(
        json.dumps(
            {
                "type": "turn.failed",
                "usage": {"input_tokens": 9, "output_tokens": 1},
                "error": {"message": "usage limit"},
            }
        )
    )
    assert [i.kind for i in items] == ["usage", "error"]
    assert p.totals.is_error and p.totals.error == "usage limit" and p.totals.tokens_in == 9


def test_cursor_result_usage_in_camel_case_is_read() -> None:
    p = CursorParser()
    p.feed(
        json.dumps(
            {
                "type": "assistant",
                "timestamp_ms": 1,
                "message": {"content": [{"type": "text", "text": "hi"}]},
            }
        )
    )
    items = p.feed(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "result": "hi",
                "usage": {"inputTokens": 10, "outputTokens": 3, "cacheReadTokens": 5},
            }
        )
    )
    assert [i.kind for i in items] == ["message", "usage"]
    assert (p.totals.tokens_in, p.totals.tokens_out) == (15, 3)


def test_lines_parser_takes_items_and_sums_usage() -> None:
    p = LinesParser()
    assert p.feed("hello")[0].kind == "log"
    (msg,) = p.feed(json.dumps({"kind": "message", "text": "trying BLOCK=1024"}))
    assert (msg.kind, msg.text) == ("message", "trying BLOCK=1024")
    p.feed(
        json.dumps(
            {
                "kind": "usage",
                "data": {"tokens_in": 100, "tokens_out": 7, "cost_usd": 0.25, "model": "m"},
            }
        )
    )
    p.feed(
        json.dumps({"kind": "usage", "data": {"tokens_in": 1, "tokens_out": 1, "cost_usd": 0.25}})
    )
    assert (p.totals.tokens_in, p.totals.tokens_out, p.totals.cost_usd, p.totals.model) == (
        101,
        8,
        0.5,
        "m",
    )
    (other,) = p.feed(json.dumps({"kind": "bogus", "x": 1}))
    assert other.kind == "log" and other.data["x"] == 1


def test_item_text_is_always_a_string() -> None:
    (call,) = ClaudeParser().feed(
        json.dumps({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": 5}]}})
    )
    assert (call.kind, call.text) == ("tool_call", "5")


def _cursor_text(text: str, **extra: object) -> str:
    return json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}, **extra}
    )


def test_cursor_deltas_without_a_recap_are_flushed_at_the_end() -> None:
    p = CursorParser()
    assert p.feed(_cursor_text("half ", timestamp_ms=1)) == []
    assert p.feed(_cursor_text("done", timestamp_ms=2)) == []
    assert [(i.kind, i.text) for i in p.finish()] == [("message", "half done")]


def test_cursor_without_partial_output_emits_each_message() -> None:
    p = CursorParser()
    assert [i.text for i in p.feed(_cursor_text("one"))] == ["one"]
    assert [i.text for i in p.feed(_cursor_text("two", model_call_id="m"))] == ["two"]
    assert p.finish() == []


def test_codex_usage_is_the_running_total_of_the_last_turn() -> None:
    p = CodexParser()
    p.feed(
        json.dumps(
            {
                "type": "turn.completed",
                "usage": {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 10},
            }
        )
    )
    p.feed(
        json.dumps(
            {
                "type": "turn.completed",
                "usage": {"input_tokens": 250, "cached_input_tokens": 90, "output_tokens": 30},
            }
        )
    )
    assert (p.totals.tokens_in, p.totals.tokens_out) == (250, 30)
