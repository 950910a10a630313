"""Evaluation processes seen from the evaluator: started, handed a request, collected.

A :class:`Proc` is one candidate or checker process, started by the evaluator's
:class:`aka.eval._workers.Workers`: a child forked by a warm zygote (:mod:`aka.eval._warm`)
or, with warm workers off, a fresh interpreter (``python -I`` with an allowlisted
environment, its own session, killed with the evaluator), with the same isolation. Results come back as HMAC-signed frames on a pipe, each stamped
with the evaluator's clock on arrival; stderr keeps a tail for error messages. A process
can be started *prepared* (:mod:`aka.eval._prepare`) before its evaluation exists; the
spare pool (:mod:`aka.eval._spares`) hands such processes to ``Workers.start``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aka.eval import _warm
from aka.eval._collected import Collected, FrameReader, drain_tail, failure, py_body
from aka.eval._contain import ESCAPED_EXIT, NO_PIDNS
from aka.eval._prepare import GATE_MARK, PREPARED, prepare_argv
from aka.eval._sandbox import read_frames
from aka.eval._wire import (
    CandidateReport,
    CandidateRequest,
    CheckerReport,
    CheckerRequest,
    Delivery,
    WireError,
    decode_report,
    encode,
)

if TYPE_CHECKING:
    from aka.eval._workers import Workers

CHILD_TIMEOUT_S = 1800.0
# The module whose process times kernels: it asks before timing (aka.eval._gate), so
# its stdin stays open after the request for the answer.
GATED_MODULE = "aka.eval._candidate"
# Frames only the sealed core writes (records, samples, its closing frame).
CORE_FRAMES = ("call", "timing", "core_done")
# Children run isolated (``-I``: no cwd, no user site, no PYTHON* variables) and find
# aka where this process found it, appended last so nothing else is shadowed; this also
# works where aka is not installed (a bare device machine running from a checkout).
AKA_ROOT = str(Path(__file__).resolve().parents[2])
# Every evaluation process (candidate, checker, zygote and what it forks) is made
# non-dumpable first: all run as one user, so otherwise one whose candidate code dropped
# its capabilities could write another's memory (aka.eval._contain.not_dumpable).
BOOTSTRAP = (
    "import sys, runpy; root, module = sys.argv[1], sys.argv[2]; del sys.argv[1:3]; "
    "sys.platform.startswith('linux') and __import__('ctypes').CDLL(None).prctl(4, 0, 0, 0, 0); "
    "sys.path.append(root); runpy.run_module(module, run_name='__main__', alter_sys=True)"
)
ENV_KEEP = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "LD_LIBRARY_PATH",
            "CC", "CXX", "MAX_JOBS", "OMP_NUM_THREADS", "XDG_CACHE_HOME")  # fmt: skip
ENV_KEEP_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "MKL_", "CUBLAS_")


VAULT_FAULT = "aka-seal: candidate code touched the sealed core's vault"
"""The last line the sealed core writes on stderr when a fault lands in its vault (the
key and the samples, no access while candidate code runs: ``_seal/seal.cpp``). Candidate
code can write it too, which only fails itself."""


def child_env(device: str) -> dict[str, str]:
    """The children's environment: an allowlist (no ``AKA_*``, no tokens or keys)."""
    env = {k: v for k, v in os.environ.items() if k in ENV_KEEP or k.startswith(ENV_KEEP_PREFIXES)}
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        # One intra-op thread: CPU timings then do not depend on OpenMP spinning on a
        # loaded machine (CPU timing exists for tests; GPU timing is unaffected).
        env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _die_with_parent() -> None:
    """In the child: get SIGKILL when the evaluator dies, so a killed run leaves no orphan."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Proc:
    """One evaluation process: started early, given its request later, then collected."""

    def __init__(self, module: str, *, cwd: Path, device: str, workers: Workers,
                 prepared: bool | None = None, cand: Path | None = None,
                 caches: dict[str, str] | None = None) -> None:  # fmt: skip
        """Start ``module``; ``prepared`` (the isolation flag) starts it prepared, ahead.

        ``cand``: the tree a candidate process imports as its candidate (its kernel
        caches are that tree's, or ``caches`` where given). A prepared process gets a
        neutral working directory and no kernel-cache variables; :meth:`send` hands it
        the real ones with the request.
        """
        self.caches = caches
        self.module = module
        self.device = device
        self.workers = workers
        self.gate = workers.gate
        self.released = False  # handed to a background reaper (collect_trusted)
        # Which evaluation holds it: a checker that serves again is handed out anew by
        # :meth:`Workers.start`, and the evaluation it served before must not give it back
        # a second time (``Workers.done_with``).
        self.lease = 0
        self.prepared = prepared
        self.gated = False  # it closed the timing gate; open again once it is gone
        self.serves_again = False  # stdin stays open for another request (aka.eval._reuse)
        self.report_from = 0  # where on the channel the current request's frames begin
        self.key = secrets.token_bytes(32)
        read_fd, write_fd = os.pipe()
        argv = [str(write_fd)]
        if prepared is None:
            argv += ["--device", device]  # containment differs by device kind
            env = child_env(device) | self._cache_env(cand)
        else:
            argv += prepare_argv(device, prepared)
            env, cwd = child_env(device), Path(tempfile.gettempdir())
        if not workers.switches.pid_namespace:
            argv.append(NO_PIDNS)
        # Warm workers: forked from a zygote with the same isolation.
        warm = (
            workers.zygotes.spawn(module, argv, cwd=cwd, env=env, result_fd=write_fd)
            if workers.warm
            else None
        )
        self.proc: subprocess.Popen[bytes] | _warm.WarmProcess = warm or subprocess.Popen(
            [sys.executable, "-I", "-c", BOOTSTRAP, AKA_ROOT, module, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            pass_fds=(write_fd,),
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        os.close(write_fd)
        if prepared is not None:
            self.gate.register(device, self.proc.pid)
        self.reader = FrameReader(read_fd, self._frame, self._junk)
        self.reader.start()
        self.tail: list[bytes] = []
        self.err = threading.Thread(
            target=drain_tail, args=(self.proc.stderr, self.tail), daemon=True
        )
        self.err.start()

    def send(self, request: CandidateRequest | CheckerRequest, cwd: Path | None = None,
             plan: str = "") -> None:  # fmt: skip
        """Hand the process its request: one line on stdin (:mod:`aka.eval._wire`).

        A prepared process also gets ``cwd`` and the kernel-cache variables for it, and
        is let run if the timing gate had stopped it. A candidate process's key and
        ``plan`` follow the line on stdin, for its sealed core alone (Python there never
        reads them), and stdin stays open for the gate's answer; other processes get
        the key in the request and stdin is closed.
        """
        assert self.proc.stdin is not None
        sealed = self.module == GATED_MODULE
        delivery = Delivery(key=None if sealed else self.key.hex())
        # It evaluates from now on: stopped whenever another candidate of the device times.
        self.gate.activate(self.device, self.proc.pid)
        if self.prepared is not None and cwd is not None:
            cand = getattr(request, "cand_dir", None)
            caches = self._cache_env(Path(cand) if cand else None)
            delivery = Delivery(delivery.key, str(cwd), caches)
        data = encode(request, delivery)
        if sealed:
            data += self.key + b"\n" + plan.encode() + b"END\n"
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            if not sealed and not self.serves_again:
                self.proc.stdin.close()

    def _cache_env(self, cand: Path | None) -> dict[str, str]:
        """A warm candidate process's kernel caches (shared by equal candidate trees, unless
        it was given its own)."""
        if self.caches is not None and self.workers.warm:
            return dict(self.caches)
        return _warm.cache_env(self.module, cand, warm=self.workers.warm)

    def _frame(self, data: bytes) -> None:
        """On the reader's thread: a signed ``gate`` mark stops the prepared processes.

        The answer goes out once they are stopped. The device is handed over when its
        core reports the timing done (``core_done``), or when this process has exited
        (:meth:`collect`, :meth:`kill`).
        """
        if self.module != GATED_MODULE:
            return
        frames, tamper = read_frames(data, self.key)
        if tamper:
            self._junk()
            return
        if self.gated:
            if any(isinstance(f, dict) and f.get("kind") == "core_done" for _, f in frames):
                self.gate.timed(self.device, self.proc.pid)
            return
        frame = frames[0][1] if frames else None
        if (
            isinstance(frame, dict)
            and frame.get("kind") == "mark"
            and frame.get("name") == GATE_MARK
        ):
            self.gated = True
            self.gate.close(self.device, self.proc.pid, self._grant)

    def _grant(self) -> None:
        """The gate's answer: every other process of the device is stopped; time now."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            self.proc.stdin.write(b"g")
            self.proc.stdin.close()

    def _junk(self) -> None:
        """Foreign bytes in the result pipe: nothing after them can be trusted, and the
        process may be waiting for an answer that cannot come; stop it now (the frames
        are judged, ``result_channel_tamper``, when it is collected)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def _ungate(self) -> None:
        """The process is gone: off the gate's books (the gate opens if it was timing)."""
        if self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ValueError, OSError):
                self.proc.stdin.close()
        self.gated = False
        self.gate.open(self.device, self.proc.pid)

    def ready(self) -> bool:
        """Whether a prepared process has done its start-up and waits for its request."""
        return self.prepared is not None and PREPARED in b"".join(self.tail)

    def alive(self) -> bool:
        """Whether the process is still running (a spare that died is not handed out)."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """Stop the process and everything in its group."""
        if self.prepared is not None:
            self.gate.release(self.device, self.proc.pid)
        # The process's reaper (aka.eval._contain) takes down what left the group when
        # asked with SIGTERM; the group is killed outright after a moment either way.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2.0)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._ungate()

    def collect(self, timeout: float) -> Collected:
        """Wait for the exit; return what the process sent and what the parent found."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return failure(f"evaluation exceeded {timeout:.0f} s")
        flags: list[dict[str, str]] = []
        try:
            os.killpg(self.proc.pid, 0)
            # Only a process that exited by itself answers for what it left running: one
            # killed by a signal (a crash, an operator's kill) may leave a compiler it was
            # waiting on, and dying gives it no result to score anyway.
            if (self.proc.returncode or 0) >= 0:
                flags.append({"flag": "background_process", "evidence": "a process it started "
                              "outlived the evaluation process (killed)"})  # fmt: skip
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc.returncode == ESCAPED_EXIT:
            flags.append({"flag": "background_process", "evidence": "processes it started "
                          "outlived it and were killed by the evaluation's reaper"})  # fmt: skip
        self._ungate()
        self.reader.join(timeout=30)
        self.err.join(timeout=5)
        return self._result(flags)

    def collect_trusted(self, timeout: float) -> Collected:
        """The checker's result as soon as it closes its channel; the exit is not awaited.

        Only for harness code (the checker): nothing it leaves running is judged, so its
        CUDA teardown (~0.1 s on the H200) overlaps what the evaluator does next; it is
        killed and reaped in the background. Without a result, this is :meth:`collect`.
        """
        self.reader.join(timeout=timeout)
        if self.reader.is_alive():
            self.kill()
            return failure(f"evaluation exceeded {timeout:.0f} s")
        result = self._result([])
        if result.report is None:  # no report: judge the exit as usual
            return self.collect(timeout)
        self.released = True
        threading.Thread(target=self.kill, daemon=True).start()
        return result

    def _result(self, flags: list[dict[str, str]]) -> Collected:
        """What the process sent for its current request: from :attr:`report_from` on (a
        checker that serves again sends each request's report after the last one's)."""
        start = self.report_from
        frames, tamper = read_frames(bytes(self.reader.data[start:]), self.key)
        if tamper:
            flags.append({"flag": "result_channel_tamper", "evidence": tamper})
        times = {end - start: t for end, t in self.reader.arrivals if end > start}
        marks: list[dict[str, Any]] = []
        core: list[dict[str, Any]] = []
        bodies: list[dict[str, Any]] = []
        for offset, frame in frames:
            kind = frame.get("kind")
            if kind == "py":  # sent by Python in the candidate process: untrusted content
                body = py_body(frame)
                if body is None:
                    flags.append({"flag": "result_channel_tamper", "evidence": "bad note"})
                elif body.get("kind") != "result":
                    marks.append({**body, "t": times.get(offset), "origin": "py"})
                else:
                    bodies.append(body)
            elif kind in CORE_FRAMES:
                core.append(frame)
            elif kind != "result":
                marks.append({**frame, "t": times.get(offset)})
            else:
                bodies.append(frame)
        done = [i for i, f in enumerate(core) if f.get("kind") == "core_done"]
        if done and done[0] != len(core) - 1:  # the gate let the others go on at the first
            flags.append({"flag": "result_channel_tamper",
                          "evidence": "core frames after the core reported its timing done"})  # fmt: skip
        report: CandidateReport | CheckerReport | None = None
        if len(bodies) > 1:
            flags.append({"flag": "result_channel_tamper", "evidence": "two result frames"})
        if bodies:
            try:
                report = (
                    decode_report(CandidateReport, bodies[0])
                    if self.module == GATED_MODULE
                    else decode_report(CheckerReport, bodies[0])
                )
            except WireError as exc:
                flags.append({"flag": "result_channel_tamper", "evidence": str(exc)[:300]})
        error = None
        if report is None:
            lines = b"".join(self.tail).decode(errors="replace").strip().splitlines()
            code = self.proc.returncode
            error = f"evaluation process died (exit {code}): {' | '.join(lines[-5:])}"
            if lines and lines[-1] == VAULT_FAULT:  # said by the core's fault handler
                flags.append({"flag": "sealed_memory", "evidence": f"exit {code}: {VAULT_FAULT}"})
        return Collected(report=report, marks=marks, core=core, flags=flags, error=error)
