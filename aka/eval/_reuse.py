"""Checker processes that serve one evaluation after another.

Every evaluation used to take a checker process of its own: a spare started ahead (CUDA
started, common kernels loaded), stopped after its one report. With eight evaluations
in flight that is sixteen CUDA starts for every eight candidates, and on an H100 the
starts were where the stream waited: the later evaluations found their processes still
starting (start stage 2.5-5.8 s), and keeping twice as many started ahead removed that
wait but slowed every other stage, for fewer candidates per minute
(docs/benchmarks.md, "Processes started ahead: more is slower").

A checker runs no candidate code. It reads a candidate's outputs as bytes of the dtype
and shape the sealed core recorded, regenerates the inputs from their seed and runs the
task's reference, after the candidate process and everything it started are gone. So a
checker that sent its report (one frame, signed with that request's key, nothing else)
goes back among the spares (:meth:`aka.eval._spares.Spares.put`) to check a later
evaluation under a new key, once the process has undone what the request's task code
changed (:func:`aka.eval._checker.fresh_state`). One that failed, timed out, sent
anything else, or has served :data:`MAX_SERVED` requests is stopped, as every checker
was. With warm workers off each evaluation still starts a fresh interpreter.
"""

from __future__ import annotations

import secrets
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from aka.eval._collected import Collected, failure
from aka.eval._proc import Proc
from aka.eval._spares import MODULES
from aka.eval._wire import CandidateRequest, CheckerRequest

if TYPE_CHECKING:
    from aka.eval._workers import Workers

__all__ = ["MAX_SERVED", "RETIRE_PEAK_BYTES", "ServingChecker", "peak_resident"]

CHECKER = MODULES[1]
MAX_SERVED = 64
"""Requests one checker serves before it is replaced: whatever a reference changed that
:func:`aka.eval._checker.fresh_state` does not undo (its allocator's fragmentation, a
patched library function) lasts a bounded number of evaluations."""
RETIRE_PEAK_BYTES = 4 << 30
"""A checker whose resident memory ever passed this is not reused: the host's caching
allocator keeps the page-locked buffers it read large outputs into, and a candidate that
returns a huge output must not leave the next evaluations' checker short of memory."""
POLL_S = 0.05
"""How often a wait for a report looks whether the checker is still alive."""


class ServingChecker(Proc):
    """A prepared checker process whose stdin stays open: a request, a report, again."""

    def __init__(self, *, device: str, workers: Workers, isolate: bool) -> None:
        super().__init__(CHECKER, cwd=Path(tempfile.gettempdir()), device=device,
                         workers=workers, prepared=isolate)  # fmt: skip
        self.isolate = isolate
        self.serves_again = True
        self.served = 0
        self.pending = False  # a request was sent and its report not taken yet
        self.broken = False  # its last report was missing, late or not alone on the channel
        self._reported = threading.Event()

    def _frame(self, data: bytes) -> None:
        """On the reader's thread: a complete frame, the report (a checker sends no other)."""
        self._reported.set()

    def send(self, request: CandidateRequest | CheckerRequest, cwd: Path | None = None,
             plan: str = "") -> None:  # fmt: skip
        """Hand over the next request under a key of its own: frames signed with an
        earlier request's key do not count for this one."""
        self.key = secrets.token_bytes(32)
        self._reported.clear()
        self.report_from = len(self.reader.data)
        self.pending = True
        super().send(request, cwd, plan)

    def collect_trusted(self, timeout: float) -> Collected:
        """The report as soon as its frame is in; then the process goes back among the
        spares for the next evaluation (:meth:`Workers.keep`), or is stopped."""
        end = time.monotonic() + timeout
        result: Collected | None = None
        while result is None and not self._reported.wait(POLL_S):
            if not self.reader.is_alive():  # it died before reporting: judged as usual
                result = self.collect(timeout)
            elif time.monotonic() >= end:
                self.kill()
                result = failure(f"evaluation exceeded {timeout:.0f} s")
        if result is None:
            result = self._result([])
            self.served += 1
        self.pending = False
        self.broken = result.report is None or bool(result.flags) or bool(result.error)
        self.released = True
        self.workers.keep(self)  # stopped there unless it can serve again
        return result

    def reusable(self) -> bool:
        """Whether it may check another evaluation: alive, nothing pending, its last
        report whole, fewer than :data:`MAX_SERVED` served, and its resident memory
        never past :data:`RETIRE_PEAK_BYTES`."""
        return (self.alive() and not self.pending and not self.broken
                and self.served < MAX_SERVED
                and peak_resident(self.proc.pid) < RETIRE_PEAK_BYTES)  # fmt: skip


def peak_resident(pid: int) -> int:
    """The most memory process ``pid`` ever had resident (``VmHWM``), in bytes; 0 where
    the kernel does not say."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0
