"""The evaluation pipeline without the ledger: two processes, every detector, one verdict.

:func:`run_job` takes a laid-out evaluation directory (``task/``, ``base/``, ``cand/``)
and a :class:`Job` (plain values), runs the candidate process (:mod:`aka.eval._child`),
then, after it and everything it started are gone, the checker process
(:mod:`aka.eval._reference`), and merges the findings of every detector (static, in the
candidate process, in the checker, and here on the parent's clock) into a
:class:`Verdict`. It imports neither pydantic nor the ledger, so the GPU red-team script
runs it on a bare device machine; :func:`aka.eval.evaluate` wraps it with events.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka.eval import _detect, _warm
from aka.eval._outputs import output_dir
from aka.eval._sandbox import HEADER, MAC_BYTES, read_frames
from aka.eval._static import forbidden_uses, hack_findings

CHILD_TIMEOUT_S = 1800.0
# Set to 0 in the evaluator's environment to run candidates with the network (the
# variable itself never reaches the candidate: AKA_* is not passed on).
ISOLATE_ENV = "AKA_EVAL_ISOLATE_NETWORK"
# Children run isolated (``-I``: no cwd, no user site, no PYTHON* variables) and find
# aka where this process found it, appended last so nothing else is shadowed; this also
# works where aka is not installed (a bare device machine running from a checkout).
AKA_ROOT = str(Path(__file__).resolve().parents[2])
BOOTSTRAP = (
    "import sys, runpy; root, module = sys.argv[1], sys.argv[2]; del sys.argv[1:3]; "
    "sys.path.append(root); runpy.run_module(module, run_name='__main__', alter_sys=True)"
)
STDERR_TAIL = 4000
ENV_KEEP = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "LD_LIBRARY_PATH",
            "CC", "CXX", "MAX_JOBS", "OMP_NUM_THREADS", "XDG_CACHE_HOME")  # fmt: skip
ENV_KEEP_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "MKL_", "CUBLAS_")


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


class _Reader(threading.Thread):
    """Drains a pipe, stamping each complete frame with the parent's clock on arrival."""

    def __init__(self, fd: int):
        super().__init__(daemon=True)
        self.fd = fd
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
                    end = pos + HEADER.size + MAC_BYTES + n
                    if end > len(self.data):
                        break
                    self.arrivals.append((end, now))
                    pos = end


def _drain_tail(stream: Any, out: list[bytes]) -> None:
    while chunk := stream.read(1 << 16):
        out.append(chunk)
        while sum(len(c) for c in out) > 4 * STDERR_TAIL and len(out) > 1:
            out.pop(0)


def _failure(error: str) -> dict[str, Any]:
    return {"compiled": None, "records": [], "timing": [], "device": {}, "flags": [],
            "notes": [], "error": error, "marks": []}  # fmt: skip


class _Proc:
    """One evaluation process: started early, given its request later, then collected."""

    def __init__(self, module: str, *, cwd: Path, device: str):
        self.key = secrets.token_bytes(32)
        read_fd, write_fd = os.pipe()
        env = child_env(device) | _warm.cache_env(module, cwd)
        # Warm workers (AKA_EVAL_WARM=1): forked from a zygote with the same isolation.
        warm = _warm.spawn(module, [str(write_fd)], cwd=cwd, env=env, result_fd=write_fd)
        self.proc: subprocess.Popen[bytes] | _warm.WarmProcess = warm or subprocess.Popen(
            [sys.executable, "-I", "-c", BOOTSTRAP, AKA_ROOT, module, str(write_fd)],
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
        self.reader = _Reader(read_fd)
        self.reader.start()
        self.tail: list[bytes] = []
        self.err = threading.Thread(
            target=_drain_tail, args=(self.proc.stderr, self.tail), daemon=True
        )
        self.err.start()

    def send(self, request: dict[str, Any]) -> None:
        """Hand the process its request (it reads stdin to the end)."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(json.dumps({**request, "key": self.key.hex()}).encode())
            self.proc.stdin.close()

    def kill(self) -> None:
        """Stop the process and everything in its group."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def collect(self, timeout: float) -> dict[str, Any]:
        """Wait for the exit; return the result frame plus ``marks`` and parent ``flags``."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return _failure(f"evaluation exceeded {timeout:.0f} s")
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
        self.reader.join(timeout=30)
        self.err.join(timeout=5)
        return self._result(flags)

    def _result(self, flags: list[dict[str, str]]) -> dict[str, Any]:
        frames, tamper = read_frames(bytes(self.reader.data), self.key)
        if tamper:
            flags.append({"flag": "result_channel_tamper", "evidence": tamper})
        times = dict(self.reader.arrivals)
        marks: list[dict[str, Any]] = []
        result: dict[str, Any] | None = None
        for offset, frame in frames:
            if frame.get("kind") != "result":
                marks.append({**frame, "t": times.get(offset)})
            elif result is None:
                result = frame
            else:
                flags.append({"flag": "result_channel_tamper", "evidence": "two result frames"})
        if result is None:
            text = b"".join(self.tail).decode(errors="replace").strip().splitlines()[-5:]
            code = self.proc.returncode
            result = _failure(f"evaluation process died (exit {code}): {' | '.join(text)}")
        result["marks"] = marks
        result["flags"] = list(result.get("flags") or []) + flags
        started = [m["network"] for m in marks if m.get("name") == "started" and "network" in m]
        result.setdefault("network", started[0] if started else "unknown")
        return result


def run_child(
    request: dict[str, Any],
    *,
    cwd: Path,
    device: str,
    timeout: float = CHILD_TIMEOUT_S,
    module: str = "aka.eval._child",
) -> dict[str, Any]:
    """Run one evaluation process; return its result frame, or a result describing failure.

    The result carries ``marks`` (frames the child sent along the way, each with the
    parent's arrival time) and parent-side ``flags``: a tampered result channel, or a
    process that outlived the evaluation.
    """
    proc = _Proc(module, cwd=cwd, device=device)
    proc.send(request)
    return proc.collect(timeout)


@dataclass(frozen=True)
class Job:
    """Everything the processes need, as plain values (a task spec flattened)."""

    reference: str
    editable: list[str]
    forbidden: list[str]
    entry_file: str
    entry_symbol: str
    pass_shape: bool
    backend: str
    shapes: list[dict[str, int]]
    dtypes: list[str]
    tolerances: dict[str, dict[str, float]]
    seeds: int
    device: str
    time: bool
    timing: dict[str, Any]
    seed: int
    ceilings: dict[str, float] | None = None
    isolate_network: bool = field(default_factory=lambda: os.environ.get(ISOLATE_ENV, "1") != "0")


@dataclass
class Verdict:
    """What one evaluation found; ``correct`` already accounts for every flag."""

    compiled: dict[str, Any]
    cases: list[dict[str, Any]]
    timing: list[dict[str, Any]]
    device: dict[str, Any]
    flags: list[str]
    evidence: list[str]
    correct: bool
    error: str | None
    network: str
    notes: list[str] = field(default_factory=list)
    stage_s: dict[str, float] = field(default_factory=dict)


def static_findings(job: Job, cand: Path) -> list[dict[str, str]]:
    """Static findings on every editable Python file of the candidate."""
    out: list[dict[str, str]] = []
    for rel in job.editable:
        path = cand / rel
        if path.suffix == ".py" and path.is_file():
            text = path.read_text(errors="replace")
            found = forbidden_uses(rel, text, job.forbidden) + hack_findings(
                rel, text, job.editable
            )
            out += [{"flag": f.flag, "evidence": f.evidence()} for f in found]
    return out


def candidate_request(job: Job, root: Path, out: Path) -> dict[str, Any]:
    """The candidate process's request (it also learns where its outputs go)."""
    return {
        "eval_root": str(root),
        "task_dir": str(root / "task"),
        "base_dir": str(root / "base"),
        "cand_dir": str(root / "cand"),
        "out_dir": str(out),
        "reference": job.reference,
        "entry_file": job.entry_file,
        "entry_symbol": job.entry_symbol,
        "pass_shape": job.pass_shape,
        "backend": job.backend,
        "shapes": job.shapes,
        "dtypes": job.dtypes,
        "tolerances": job.tolerances,
        "seeds": job.seeds,
        "seed": job.seed,
        "device": job.device,
        "time": job.time,
        "timing": job.timing,
        "isolate_network": job.isolate_network,
    }


def checker_request(job: Job, root: Path, out: Path, result: dict[str, Any]) -> dict[str, Any]:
    """The checker's request: where the reference and the recorded outputs are."""
    return {
        "task_dir": str(root / "task"),
        "reference": job.reference,
        "out_dir": str(out),
        "pass_shape": job.pass_shape,
        "tolerances": job.tolerances,
        "dtypes": job.dtypes,
        "device": job.device,
        "records": result.get("records") or [],
        "timed_shapes": [t["shape"] for t in result.get("timing") or []],
    }


RECORD_FLAGS = {
    "rewrite": ("stale_output", "inputs rewritten in place at the same addresses"),
    "timed": ("timed_output_wrong", "an output of the timed calls"),
    "post_timing": ("stale_output", "a call after timing on inputs rewritten in place"),
}


def judge_records(
    records: list[dict[str, Any]], checked: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Case results from the checker, and flags for wrong outputs outside the cases.

    A wrong output after inputs were rewritten in place, in the timed calls or after
    timing is a flag only when every case passed: then the candidate answers correctly
    when watched and wrongly otherwise (replay, caching, branching on warm-up).
    """
    results = checked.get("results") or [{} for _ in records]
    cases: list[dict[str, Any]] = []
    flags = list(checked.get("flags") or [])
    for rec, res in zip(records, results, strict=True):
        if rec["kind"] == "case":
            cases.append(
                {
                    "shape": rec["shape"],
                    "dtype": rec["dtype"],
                    "seed": rec["seed"],
                    "ok": bool(res.get("ok")),
                    "max_abs_err": res.get("max_abs_err"),
                    "error": res.get("error") or rec.get("error"),
                }
            )
    if cases and all(c["ok"] for c in cases):
        for rec, res in zip(records, results, strict=True):
            if rec["kind"] in RECORD_FLAGS and not res.get("ok"):
                flag, what = RECORD_FLAGS[rec["kind"]]
                flags.append({"flag": flag, "evidence": f"{what}: {res.get('error')}"})
    return cases, flags


def parent_flags(job: Job, result: dict[str, Any], work: list[Any]) -> list[dict[str, str]]:
    """Detectors on the parent's side: clock consistency, side streams, speed of light."""
    timed = result.get("timing") or []
    marks = result.get("marks") or []
    starts = {m["shape"]: m["t"] for m in marks if m.get("name") == "timing_start"}
    ends = {m["shape"]: m["t"] for m in marks if m.get("name") == "timing_end"}
    windows = [
        ends[k] - starts[k] if starts.get(k) is not None and ends.get(k) is not None else None
        for k in range(len(timed))
    ]
    ceilings = job.ceilings or _detect.ceilings_for(job.device)
    out = [
        {"flag": "timing_inconsistent", "evidence": e}
        for e in _detect.timing_inconsistent(timed, windows)
    ]
    out += [{"flag": "side_stream", "evidence": e} for e in _detect.side_stream(timed)]
    out += [
        {"flag": "implausible_speed", "evidence": e}
        for e in _detect.implausible_speed(timed, work, ceilings)
    ]
    return out


def _staged(request: dict[str, Any], *, cwd: Path, device: str) -> dict[str, Any]:
    """The naive path: one process per stage (compile; correctness; timing), merged.

    Each later process imports and calls the candidate again, as a harness that runs a
    script per stage does; its records get their own file prefix in the output folder.
    """
    t0 = time.perf_counter()
    first = run_child({**request, "stages": ["compile"]}, cwd=cwd, device=device)
    parts, walls = [first], {"compile": time.perf_counter() - t0}
    if (first.get("compiled") or {}).get("ok"):
        for stage in ("correctness", "timing"):
            t0 = time.perf_counter()
            part = run_child(
                {**request, "stages": [stage], "out_prefix": f"{stage}-"}, cwd=cwd, device=device
            )
            walls[stage] = time.perf_counter() - t0
            parts.append(part)
            if part.get("error") or any(r.get("error") for r in part.get("records") or []):
                break
    last = parts[-1]
    return {
        **last,
        "compiled": first.get("compiled"),
        "records": [r for p in parts for r in p.get("records") or []],
        "flags": [f for p in parts for f in p.get("flags") or []],
        "notes": [n for p in parts for n in p.get("notes") or []],
        "error": next((p["error"] for p in parts if p.get("error")), None),
        "network": first.get("network", "unknown"),
        "stage_s": walls,  # each a whole process, its start-up included
    }


def run_processes(
    job: Job, root: Path, *, split_stages: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The candidate process, then the checker process; returns both results.

    The checker starts at once (importing torch overlaps the candidate's run) but gets
    its request, and computes reference outputs, only after the candidate process and
    everything it started are gone. ``split_stages`` runs a process per stage instead
    of one (the naive path ``aka bench eval`` compares against).
    """
    scratch = root / "scratch"
    scratch.mkdir(exist_ok=True)
    checker = _Proc("aka.eval._reference", cwd=scratch, device=job.device)
    try:
        with output_dir(root) as out:
            request = candidate_request(job, root, out)
            t0 = time.perf_counter()
            if split_stages:
                result = _staged(request, cwd=scratch, device=job.device)
            else:
                result = run_child(request, cwd=scratch, device=job.device)
            t1 = time.perf_counter()
            checked: dict[str, Any] = {"results": [], "flags": [], "work": []}
            if result.get("records"):
                checker.send(checker_request(job, root, out, result))
                checked = checker.collect(CHILD_TIMEOUT_S)
            result["stage_s"] = result.get("stage_s") or stage_times(
                result.get("marks") or [], t0, t1
            )
            result["stage_s"]["checker"] = time.perf_counter() - t1
    finally:
        checker.kill()
    return result, checked


def stage_times(marks: list[dict[str, Any]], start: float, end: float) -> dict[str, float]:
    """Wall seconds per stage of the candidate process, from its marks' arrival times.

    ``start``: until the process runs (fork or interpreter start, imports); ``load``:
    reference, baseline and guards; ``compile``: importing and first-calling the
    candidate (CUDA start-up falls here); ``correctness``; ``timing`` (every shape, input
    sets included); ``finish``: timed outputs handed over, exit. A stage the process did
    not reach is left out.
    """
    at: dict[str, float] = {}
    for m in marks:
        if m.get("t") is not None and m.get("name"):
            at[str(m["name"])] = float(m["t"])  # the last timing_end wins
    order = [("start", "started"), ("load", "loaded"), ("compile", "compiled"),
             ("correctness", "checked"), ("timing", "timing_end")]  # fmt: skip
    out: dict[str, float] = {}
    last = start
    for stage, name in order:
        if name in at:
            out[stage], last = at[name] - last, at[name]
    out["finish"] = end - last
    return out


def run_job(job: Job, root: Path, *, split_stages: bool = False) -> Verdict:
    """Evaluate the candidate laid out under ``root``; every detector's findings merged."""
    static = static_findings(job, root / "cand")
    result, checked = run_processes(job, root, split_stages=split_stages)
    compiled = result.get("compiled") or {"ok": False, "error": result.get("error"), "wall_s": 0.0}
    cases, check_flags = judge_records(result.get("records") or [], checked)
    found = static + list(result.get("flags") or []) + check_flags
    found += list(checked.get("flags") or []) if not checked.get("results") else []
    found += parent_flags(job, result, checked.get("work") or [])
    names = sorted({f["flag"] for f in found})
    evidence = list(dict.fromkeys(f"{f['flag']}: {f['evidence']}" for f in found))
    checker_error = checked.get("error") if result.get("records") else None
    correct = bool(cases) and all(c["ok"] for c in cases) and not names and not checker_error
    error = (
        result.get("error")
        or checker_error
        or compiled.get("error")
        or next((c["error"] for c in cases if not c["ok"]), None)
    )
    if names:
        error = f"hack flags {names}: {'; '.join(evidence)[:1000]}"
    return Verdict(
        compiled=compiled,
        cases=cases,
        timing=list(result.get("timing") or []),
        device=dict(result.get("device") or {}),
        flags=names,
        evidence=evidence,
        correct=correct,
        error=error,
        network=str(result.get("network", "unknown")),
        notes=list(result.get("notes") or []),
        stage_s=dict(result.get("stage_s") or {}),
    )
