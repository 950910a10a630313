"""A chatty agent: the transcript and the stored items stay under their caps, streamed."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from blake3 import blake3

from aka import events as ev
from aka.agent import AgentItem
from aka.attempt import _Sink
from aka_agents._process import Limits, run_process

_CHATTY = r"""
import sys
out = sys.stdout.buffer
for i in range(int(sys.argv[1])):
    out.write(b"line %08d " % i + b"x" * (i % 300) + b"\n")
"""


def _stream(lines: int) -> bytes:
    return b"".join(b"line %08d " % i + b"x" * (i % 300) + b"\n" for i in range(lines))


def test_a_long_stream_keeps_head_and_tail_and_digests_the_middle(tmp_path: Path) -> None:
    lines, cap = 120_000, 1 << 20  # about 22 MB of output
    seen: list[str] = []
    result = run_process(
        [sys.executable, "-c", _CHATTY, str(lines)],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        limits=Limits(timeout_seconds=120, max_transcript_bytes=cap),
        on_line=seen.append,
    )
    whole = _stream(lines)
    assert result.exit_code == 0 and len(seen) == lines, "the parser still sees every line"
    assert result.stdout_bytes == len(whole) and result.truncated
    half = cap // 2
    assert result.transcript.startswith(whole[:half]) and result.transcript.endswith(whole[-half:])
    assert len(result.transcript) < cap + 200
    assert result.omitted_bytes == len(whole) - cap
    assert result.omitted_digest == "b3:" + blake3(whole[half:-half]).hexdigest()
    marker = result.transcript[half : len(result.transcript) - half].decode()
    assert str(result.omitted_bytes) in marker and str(result.omitted_digest) in marker


def test_a_short_stream_is_kept_whole(tmp_path: Path) -> None:
    result = run_process(
        [sys.executable, "-c", _CHATTY, "50"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        limits=Limits(timeout_seconds=60, max_transcript_bytes=1 << 20),
        on_line=lambda line: None,
    )
    assert result.transcript == _stream(50) and not result.truncated
    assert result.omitted_bytes == 0 and result.omitted_digest is None


def test_stored_agent_items_stop_at_the_cap_and_say_what_was_left_out() -> None:
    events: list[ev.AgentOutput] = []
    sink = _Sink(lambda e: events.append(e), try_no=1, cap=200_000)  # type: ignore[arg-type]
    for i in range(5_000):
        sink.emit(AgentItem("message", f"chunk {i} " + "y" * 1000))
    sink.emit(AgentItem("usage", "tokens", {"tokens_in": 7}))
    sink.close()
    items = [it for e in events for it in e.items]
    stored = sum(len(it.text) + len(it.data) for it in items[:-2])
    assert stored <= 200_000
    assert items[-2].kind == "usage", "usage is stored past the cap"
    summary = json.loads(items[-1].data)
    assert summary["dropped_items"] == 5_000 - (len(items) - 2)
    assert "byte cap" in items[-1].text


def test_a_failed_append_does_not_grow_the_next_batch() -> None:
    sizes: list[int] = []

    def emit(event: ev.AgentOutput) -> None:
        sizes.append(len(event.items))
        raise OSError(28, "No space left on device")

    sink = _Sink(emit, try_no=1)  # type: ignore[arg-type]
    for i in range(3 * 64):
        with contextlib.suppress(OSError):
            sink.emit(AgentItem("message", str(i)))
    assert sizes == [64, 64, 64]
