"""Every stream parser by format name (the ``command`` agent's ``stream`` setting)."""

from __future__ import annotations

from aka_agents._stream_codex import CodexParser
from aka_agents._stream_cursor import CursorParser
from aka_agents._streams import ClaudeParser, LinesParser, StreamParser

PARSERS: dict[str, type[StreamParser]] = {
    "claude": ClaudeParser,
    "codex": CodexParser,
    "cursor": CursorParser,
    "lines": LinesParser,
}
