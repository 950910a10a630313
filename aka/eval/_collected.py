"""What comes back from an evaluation process: its frames, drained and stamped on arrival,
and the result the evaluator gathers from them (:class:`Collected`)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aka.eval._sandbox import HEADER, MAC_BYTES
from aka.eval._wire import CandidateReport, CheckerReport

__all__ = [
    "MAX_FRAME",
    "STDERR_TAIL",
    "Collected",
    "FrameReader",
    "drain_tail",
    "failure",
    "py_body",
]

STDERR_TAIL = 4000
MAX_FRAME = 256 << 20  # the largest frame an evaluation process sends (records, samples)


class FrameReader(threading.Thread):
    """Drains a pipe, stamping each complete frame with the parent's clock on arrival.

    ``on_frame`` sees each complete frame's bytes as it arrives (the gate request).
    """

    def __init__(self, fd: int, on_frame: Callable[[bytes], None],
                 on_junk: Callable[[], None] | None = None):  # fmt: skip
        super().__init__(daemon=True)
        self.fd = fd
        self.on_frame = on_frame
        self.on_junk = on_junk or (lambda: None)
        self.data = bytearray()
        self.arrivals: list[tuple[int, float]] = []  # (end offset of a frame, time)

    def run(self) -> None:
        with os.fdopen(self.fd, "rb", buffering=0) as f:
            pos = 0
            while chunk := f.read(1 << 16):
                now = time.perf_counter()
                self.data += chunk
                while len(self.data) - pos >= HEADER.size + MAC_BYTES:
                    (n,) = HEADER.unpack_from(self.data, pos)
                    if n > MAX_FRAME:  # no writer of ours frames this much: foreign bytes
                        self.on_junk()
                        pos = len(self.data)
                        break
                    end = pos + HEADER.size + MAC_BYTES + n
                    if end > len(self.data):
                        break
                    self.arrivals.append((end, now))
                    # The frame is judged later with the rest; whatever it holds must
                    # not stop the draining.
                    with contextlib.suppress(Exception):
                        self.on_frame(bytes(self.data[pos:end]))
                    pos = end


def drain_tail(stream: Any, out: list[bytes]) -> None:
    # ``read1``: what has arrived, as it arrives (``read`` waits for a whole 64 KiB or the
    # end), so that a line a live process wrote is seen while it runs (``Proc.ready``)
    read = getattr(stream, "read1", stream.read)
    while chunk := read(1 << 16):
        out.append(chunk)
        while sum(len(c) for c in out) > 4 * STDERR_TAIL and len(out) > 1:
            out.pop(0)


@dataclass
class Collected:
    """What the evaluator gathered from one evaluation process.

    ``report``: the process's own report, decoded (``None`` if it sent none, or one that
    is not its type); ``marks``: frames sent along the way, each with the parent's clock
    on arrival; ``core``: the sealed core's frames; ``flags``: the parent's findings (a
    tampered channel, a process that outlived the evaluation); ``error``: why there is
    no report (a death, a timeout).
    """

    report: CandidateReport | CheckerReport | None
    marks: list[dict[str, Any]] = field(default_factory=list)
    core: list[dict[str, Any]] = field(default_factory=list)
    flags: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None

    @property
    def network(self) -> str:
        """How the process's network was isolated, as it reported or marked it."""
        if isinstance(self.report, CandidateReport):
            return self.report.network
        started = [m["network"] for m in self.marks
                   if m.get("name") in ("started", "loaded") and m.get("network")]  # fmt: skip
        return str(started[0]) if started else "unknown"


def failure(error: str) -> Collected:
    """A process that produced no report."""
    return Collected(report=None, error=error)


def py_body(frame: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON object a ``py`` frame carries, or None if it is not one."""
    try:
        body = json.loads(str(frame.get("body")))
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
