"""An agent's stdout on its way in: a capped, streamed transcript and lines in order.

The raw stdout is kept as the transcript under a size cap, streamed: the first and the
last half of the cap are kept, the bytes between are counted and hashed (BLAKE3) as they
pass and a marker line in the transcript says how many and their digest, so neither
memory nor what is stored grows with the output. Every line still reaches the parser
(the final usage event is not lost); lines longer than a limit are cut, the rest of the
line dropped and counted. A reader thread only reads; lines are handed to the caller's
thread through a bounded queue, in stream order.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import IO

from blake3 import blake3

STDERR_TAIL = 64 * 1024
QUEUE_LINES = 10_000  # lines read ahead of the parser before the reader waits


class Transcript:
    """The head and tail of a stream under a byte cap, and the count and digest of the rest.

    Memory stays under about twice the cap whatever the stream's size: the head is
    filled first, later bytes go to a tail buffer trimmed to its half of the cap, and
    the bytes trimmed off (the omitted middle, in stream order) are hashed as they go.
    """

    def __init__(self, cap: int):
        self.head_cap = max(0, cap) // 2
        self.tail_cap = max(0, cap) - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.omitted = 0
        self._middle = blake3()

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - self.tail_cap
        if excess > self.tail_cap or (excess > 0 and len(chunk) >= self.tail_cap):
            self._middle.update(memoryview(self.tail)[:excess])
            self.omitted += excess
            del self.tail[:excess]

    def finish(self) -> None:
        excess = len(self.tail) - self.tail_cap
        if excess > 0:
            self._middle.update(memoryview(self.tail)[:excess])
            self.omitted += excess
            del self.tail[:excess]

    @property
    def omitted_digest(self) -> str | None:
        return "b3:" + self._middle.hexdigest() if self.omitted else None

    def value(self) -> bytes:
        """Head, a marker line for what was left out (if anything), tail."""
        self.finish()
        if not self.omitted:
            return bytes(self.head + self.tail)
        marker = (
            f"\n[aka: {self.omitted} bytes of {self.total} left out here; "
            f"their blake3 is {self.omitted_digest}]\n"
        ).encode()
        return bytes(self.head) + marker + bytes(self.tail)


class StdoutPump:
    """Reader state for stdout: the transcript under its cap, long-line accounting."""

    def __init__(self, cap: int, max_line_bytes: int, on_line: Callable[[str], None]):
        self.max_line_bytes = max_line_bytes
        self.on_line = on_line
        self.transcript = Transcript(cap)
        self.long_lines = 0

    @property
    def capped(self) -> bool:
        self.transcript.finish()
        return self.transcript.omitted > 0

    def keep(self, chunk: bytes) -> None:
        self.transcript.add(chunk)

    def pump(self, stream: IO[bytes]) -> None:
        limit = max(1, self.max_line_bytes)
        skipping = False
        while chunk := stream.readline(limit):
            complete = chunk.endswith(b"\n")
            if skipping:  # the rest of a line already cut
                skipping = not complete
                continue
            if not complete and len(chunk) >= limit:
                self.long_lines += 1
                skipping = True
                chunk += b"\n"
            self.keep(chunk)
            self.on_line(chunk.decode("utf-8", "replace").rstrip("\r\n"))


def pump_tail(stream: IO[bytes], out: list[bytes]) -> None:
    tail = b""
    while chunk := stream.read(8192):
        tail = (tail + chunk)[-STDERR_TAIL:]
    out.append(tail)


class Lines:
    """Hands stdout lines from the reader thread to the caller's thread, in order."""

    def __init__(self, on_line: Callable[[str], None]):
        self.queue: queue.Queue[str | None] = queue.Queue(maxsize=QUEUE_LINES)
        self.on_line = on_line
        self.eof = False
        self.handler_errors = 0

    def handle_next(self, wait: float) -> None:
        """Handle one line if one arrives within ``wait`` seconds."""
        try:
            line = self.queue.get(timeout=wait)
        except queue.Empty:
            return
        if line is None:
            self.eof = True
            return
        try:
            self.on_line(line)
        except Exception:  # a handler bug must not stop the draining of the pipe
            self.handler_errors += 1

    def drain(self, reader: threading.Thread, within: float) -> None:
        """Handle what is left, until end of file or ``within`` seconds."""
        end = time.monotonic() + within
        while not self.eof and time.monotonic() < end:
            if not reader.is_alive() and self.queue.empty():
                return
            self.handle_next(0.05)


def pump_stdout(out: StdoutPump, stream: IO[bytes], lines: Lines) -> None:
    try:
        out.pump(stream)
    finally:
        lines.queue.put(None)
