"""Evaluating command-driven tasks: the task's own scripts compile, check and time.

A command-driven task (imported from an AgentKernelArena folder) carries a
:class:`aka.tasks.CommandSpec`. The evaluator lays out ``base/`` (the task's sources as
staged) and ``cand/`` (the same with the candidate's editable files or folders) from
digests, as for every task, so nothing else the agent wrote is there; then :func:`run_commands`
runs, in ``cand/``, the compile command and the correctness command (exit status 0 is
success), and when timing is asked for and the candidate is correct, the performance
command alternately in ``base/`` and ``cand/`` for a few rounds (interleaved, so drift
hits both alike), reading the ``performance_report.json`` each run writes: a JSON list
of ``{test_case_id, execution_time_ms, params}``. Per test case the median over rounds
is the time and the spread over rounds bounds the speedup. Timing runs under the
evaluator's timing gate: other evaluations on the device, and other evaluators sharing
a host gate, are stopped meanwhile (on one H200, AgentKernelArena baselines timed beside
seven other validations got A/A speedups from 0.12 to 6.2). Where aka's timing helper
is in the runner (``timing_gate: helper``), the helper asks for the device around its
timed loops through two pipes (:data:`GATE_ENV`), so the command's start, imports and
compiles overlap with other work; otherwise each performance run holds the device
whole (:meth:`aka.eval._gate.Gate.hold`).

The result has the shape of the evaluation child's result (``compiled``, ``cases``,
``timing``, ``device``, ``error``) plus ``correct``, and :class:`CommandKind` turns it
into the same verdict, so the evaluator records the same events for every kind. The
repository and image kinds (:mod:`aka.kinds._repository`, :mod:`aka.kinds._image`) are
command kinds whose sources are fetched when the task is staged.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aka.eval import EvalRequest, Verdict, current_workers, tree_caches
from aka.kind_specs import CommandSpec
from aka.kinds._protocol import CheckContext, Stage
from aka.kinds._shared_checks import baseline_checks, targets_check
from aka.tasks import Task

if TYPE_CHECKING:
    from aka.eval import Gate
    from aka_ledger import Ledger

__all__ = ["CommandKind", "read_report", "run_command", "run_commands"]

ROUNDS = 3
"""Interleaved rounds of the performance command per arm, at least..."""
MAX_ROUNDS = 7
"""...and at most: rounds are added while a case's speedup interval is wider than
:data:`SPREAD` either side (Triton autotunes each process afresh and may keep another
config; a GPU's clocks differ from one process to the next)."""
SPREAD = 0.05
ADDR_NO_RANDOMIZE = 0x0040000
"""``<linux/personality.h>``: a process started with it maps its libraries, heap and stacks
at the same addresses as every other such process of the same command."""
GATE_ENV = "AKA_TIMING_GATE"
"""The performance command's two pipe descriptors (ask, answer) of the timing gate."""
TAIL_CHARS = 2000
NOISE_FIX = (
    "the performance command times itself, so aka's timing settings do not apply: give "
    "each case more timed iterations in the runner's loop (or time it with aka's helper, "
    "`timing_gate: helper`, docs/authoring.md), or test shapes whose kernels run well "
    "above the tens of microseconds a Python launch takes"
)
"""What a command task's failed ``timing_noise`` names as its fix."""


def _env(device: str, caches: dict[str, str] | None = None, fixed: bool = True) -> dict[str, str]:
    """The commands' environment: this interpreter first on PATH, no ledger variables;
    ``caches`` (:func:`aka.eval.tree_caches`) where given, Triton's autotuning kept there;
    with ``fixed``, one hash seed for every process (:func:`_fixed_layout`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AKA_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if fixed:
        env["PYTHONHASHSEED"] = "0"
    if caches:
        env.update(caches)
        env["TRITON_CACHE_AUTOTUNING"] = "1"
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    elif device.startswith("cuda:"):
        env["CUDA_VISIBLE_DEVICES"] = device.split(":", 1)[1]
    return env


@contextlib.contextmanager
def _fixed_layout(fixed: bool) -> Iterator[str]:
    """Processes this thread starts inside the block run with address-space randomization
    off; yields how their layout is (``fixed``, or ``random`` and why).

    A command task's case times a kernel launch of 20-60 µs, mostly host code, between its
    runner's two events, and each round is a new process: one process of the same code
    ran every case 5-12 % slower than the next on an H100, which a few rounds per arm do
    not average out. Where a process's hot code and data fall in the caches moves with
    the addresses randomization gives it, and dict probes with its hash seed; fixed
    addresses (and one hash seed, :func:`_env`) take both out of what differs between
    two processes of the same code (``tools/command_noise.py`` measures the rest). The
    execution domain is the calling thread's and children inherit it, so other threads'
    children are untouched; where it cannot be set (a seccomp profile that allows only
    the default domain, as Docker's does) the commands run randomized and the result
    says so.
    """
    if not fixed or not sys.platform.startswith("linux"):
        yield "random"
        return
    old, err = _personality(0xFFFFFFFF)  # only reads it
    if old == -1 or (err := _personality(old | ADDR_NO_RANDOMIZE)[1]):
        yield f"random (personality: {os.strerror(err)})"
        return
    try:
        yield "fixed"
    finally:
        _personality(old)


def layout() -> str:
    """How a command run with ``fixed`` is laid out on this host (what
    :func:`_fixed_layout` yields), found by setting the domain and putting it back."""
    with _fixed_layout(True) as how:
        return how


def _personality(persona: int) -> tuple[int, int]:
    """``personality(2)`` of the calling thread: (the domain before or -1, errno)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    before = int(libc.personality(ctypes.c_ulong(persona)))
    return before, ctypes.get_errno() if before == -1 else 0


def run_command(
    command: str,
    cwd: Path,
    *,
    device: str,
    timeout: float,
    caches: dict[str, str] | None = None,
    fixed: bool = True,
) -> tuple[bool, str, float]:
    """Run one shell command in ``cwd``: (exit status 0, output tail, seconds).

    ``caches``: the kernel cache variables of the code in ``cwd``
    (:func:`aka.eval.tree_caches`), with Triton's autotuning results kept there too;
    ``fixed``: the process laid out as every other (:func:`_fixed_layout`)."""
    ok, detail, wall, _ = _run(command, cwd, device=device, timeout=timeout, caches=caches,
                               fixed=fixed)  # fmt: skip
    return ok, detail, wall


def _run(
    command: str,
    cwd: Path,
    *,
    device: str,
    timeout: float,
    gate: Gate | None = None,
    caches: dict[str, str] | None = None,
    fixed: bool = True,
) -> tuple[bool, str, float, bool]:
    """:func:`run_command`, and with ``gate`` offered to the command: whether it asked.

    With a gate, the command gets two pipes (:data:`GATE_ENV`): a byte ``g`` on the first
    asks for the device, answered with one byte on the second once everything else on
    it is stopped; ``d`` (or the pipe closing when the command exits) gives it back.
    """
    env = _env(device, caches, fixed)
    fds: tuple[int, ...] = ()
    if gate is not None:
        ask_r, ask_w = os.pipe()
        answer_r, answer_w = os.pipe()
        env[GATE_ENV] = f"{ask_w},{answer_r}"
        fds = (ask_w, answer_r)
    t0 = time.perf_counter()
    with _fixed_layout(fixed):
        proc = subprocess.Popen(
            command, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True, pass_fds=fds,
        )  # fmt: skip
    asked = threading.Event()
    server = None
    if gate is not None:
        for fd in fds:
            os.close(fd)
        server = threading.Thread(
            target=_serve_gate, args=(gate, device, proc.pid, ask_r, answer_w, asked),
            daemon=True,
        )  # fmt: skip
        server.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return False, f"`{command}` exceeded {timeout:.0f} s", time.perf_counter() - t0, False
    finally:
        if server is not None:
            server.join(timeout=10.0)  # the pipe closes once the command's processes exit
    tail = (out + err)[-TAIL_CHARS:]
    ok = proc.returncode == 0
    detail = "" if ok else f"`{command}` exited {proc.returncode}: {tail.strip()}"
    return ok, detail, time.perf_counter() - t0, asked.is_set()


def _serve_gate(
    gate: Gate, device: str, pid: int, ask: int, answer: int, asked: threading.Event
) -> None:
    """Answer one command's asks until its end of the pipe closes; the device is given
    back on ``d``, or when the command exits holding it."""

    def grant() -> None:
        with contextlib.suppress(OSError):
            os.write(answer, b"g")

    holding = False
    try:
        while byte := os.read(ask, 1):
            if byte == b"g" and not holding:
                asked.set()
                holding = True
                gate.close(device, pid, grant)
            elif byte == b"d" and holding:
                holding = False
                gate.open(device, pid)
    finally:
        if holding:
            gate.open(device, pid)
        os.close(ask)
        os.close(answer)


def read_report(path: Path) -> dict[str, tuple[float, dict[str, Any]]]:
    """``test_case_id`` -> (milliseconds, params) from a performance report.

    Raises:
        ValueError: missing, not JSON, or not a list of ``{test_case_id,
            execution_time_ms}`` objects; the message says which.
    """
    if not path.is_file():
        raise ValueError(f"the performance command wrote no {path.name}")
    try:
        items = json.loads(path.read_text())
    except ValueError as exc:
        raise ValueError(f"{path.name} is not JSON: {exc}") from None
    if not isinstance(items, list) or not items:
        raise ValueError(f"{path.name} must be a non-empty JSON list")
    out: dict[str, tuple[float, dict[str, Any]]] = {}
    for item in items:
        try:
            ms = float(item["execution_time_ms"])
            out[str(item["test_case_id"])] = (ms, dict(item.get("params") or {}))
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                f"{path.name}: each entry needs test_case_id and execution_time_ms, got {item!r}"
            ) from None
        if not ms > 0:
            raise ValueError(f"{path.name}: execution_time_ms must be positive, got {ms}")
    return out


def _shape(index: int, params: dict[str, Any]) -> dict[str, int]:
    ints = {k: v for k, v in params.items() if type(v) is int}
    return {"case": index, **ints}


def _stats(ms: list[float]) -> dict[str, Any]:
    """Median seconds of the rounds, and as the interval their range, or from five rounds
    on the second lowest to the second highest (one process's outlier does not set it)."""
    s = sorted(m / 1e3 for m in ms)
    cut = 1 if len(s) >= 5 else 0
    return {"median_s": statistics.median(s), "ci_low_s": s[cut], "ci_high_s": s[-1 - cut],
            "n": len(s)}  # fmt: skip


def _performance(
    spec: CommandSpec, folder: Path, device: str, caches: dict[str, str]
) -> tuple[bool, str]:
    """One performance run with the device to itself: its timed loops alone when aka's
    helper asks for the device, else (or when it never asked) the whole command."""
    gate = current_workers().gate
    if spec.timing_gate == "helper":
        ok, detail, _, asked = _run(spec.performance, folder, device=device,
                                    timeout=spec.timeout_s, gate=gate, caches=caches)  # fmt: skip
        if asked or not ok:
            return ok, detail
        (folder / spec.report).unlink(missing_ok=True)  # timed without asking: again
    with gate.hold(device):
        ok, detail, _ = run_command(spec.performance, folder, device=device,
                                    timeout=spec.timeout_s, caches=caches)  # fmt: skip
    return ok, detail


def _time(
    spec: CommandSpec,
    base: Path,
    cand: Path,
    device: str,
    rounds: int,
    caches: dict[Path, dict[str, str]],
) -> list[dict[str, Any]]:
    """Rounds of both arms' performance commands, interleaved (base first in even rounds),
    ``rounds`` of them and more, up to :data:`MAX_ROUNDS`, while any case is too spread."""
    runs: dict[str, list[dict[str, tuple[float, dict[str, Any]]]]] = {"base": [], "cand": []}
    out: list[dict[str, Any]] = []
    for r in range(max(rounds, MAX_ROUNDS)):
        order = [("base", base), ("cand", cand)] if r % 2 == 0 else [("cand", cand), ("base", base)]
        for label, folder in order:
            report = folder / spec.report
            report.unlink(missing_ok=True)
            ok, detail = _performance(spec, folder, device, caches[folder])
            if not ok:
                raise RuntimeError(f"performance ({label}): {detail}")
            runs[label].append(read_report(report))
        if r + 1 >= rounds:
            out = _pairs(runs)
            if not any(_spread(item["pair"]) for item in out):
                break
    return out


def _spread(pair: dict[str, Any]) -> bool:
    """Whether ``pair``'s speedup interval reaches beyond :data:`SPREAD` either side of it."""
    lo, hi = pair["speedup_ci"]
    return bool(lo < pair["speedup"] / (1 + SPREAD) or hi > pair["speedup"] * (1 + SPREAD))


def _pairs(runs: dict[str, list[dict[str, tuple[float, dict[str, Any]]]]]) -> list[dict[str, Any]]:
    """One timing pair per test case every report of both arms holds."""
    cases = sorted(set.intersection(*(set(r) for r in runs["base"] + runs["cand"])))
    if not cases:
        raise RuntimeError("the baseline and candidate reports share no test_case_id")
    out = []
    n = len(runs["base"])
    for i, case in enumerate(cases):
        b = _stats([r[case][0] for r in runs["base"]])
        c = _stats([r[case][0] for r in runs["cand"]])
        pair = {
            "baseline": b,
            "candidate": c,
            "speedup": b["median_s"] / c["median_s"],
            "speedup_ci": [b["ci_low_s"] / c["ci_high_s"], b["ci_high_s"] / c["ci_low_s"]],
            "method": f"task performance command, {n} interleaved rounds, median; range over "
            "rounds (less the extremes from five rounds on) as the interval",
            "test_case_id": case,
        }
        out.append({"shape": _shape(i, runs["base"][0][case][1]), "dtype": "task", "pair": pair})
    return out


def run_commands(
    spec: CommandSpec, *, base: Path, cand: Path, device: str, time: bool, rounds: int = ROUNDS
) -> dict[str, Any]:
    """Compile, check and (optionally) time a candidate with the task's own commands."""
    result: dict[str, Any] = {
        "compiled": None,
        "cases": [],
        "timing": [],
        "device": {"device": device, "judge": "task commands"},
        "error": None,
        "correct": False,
    }
    if spec.skip_reason:
        result["error"] = f"task skipped on this platform: {spec.skip_reason}"
        return result
    # The commands are this process's children: evaluators sharing a host gate stop
    # them while they time, as they stop each other's candidate processes.
    current_workers().gate.join(device)
    result["device"]["layout"] = layout()  # what every command below gets
    # Each arm's kernel caches by the digest of its code as laid out, before any command
    # writes into it: Triton's autotuner then picks a kernel's config once for that code
    # and every later process of it (rounds, evaluations, an A/A arm of the same code)
    # times that config, instead of whichever one a process's own autotuning favoured
    # under the load of the moment. A candidate's code never shares the baseline's.
    caches = {base: tree_caches(base), cand: tree_caches(cand)}
    ok, detail, wall = run_command(spec.compile, cand, device=device, timeout=spec.timeout_s,
                                   caches=caches[cand])  # fmt: skip
    result["compiled"] = {"ok": ok, "error": detail or None, "wall_s": wall}
    if not ok:
        result["error"] = detail
        return result
    ok, detail, _ = run_command(spec.correctness, cand, device=device, timeout=spec.timeout_s,
                                caches=caches[cand])  # fmt: skip
    result["cases"] = [
        {
            "shape": {},
            "dtype": "task",
            "seed": 0,
            "ok": ok,
            "max_abs_err": None,
            "error": detail or None,
        }
    ]
    result["correct"] = ok
    if not ok or not time:
        result["error"] = detail or None
        return result
    try:
        built, detail, _ = run_command(spec.compile, base, device=device, timeout=spec.timeout_s,
                                       caches=caches[base])  # fmt: skip
        if not built:
            raise RuntimeError(f"the baseline does not compile: {detail}")
        result["timing"] = _time(spec, base, cand, device, rounds, caches)
    except (RuntimeError, ValueError) as exc:
        result["error"] = f"timing failed: {exc}"
    return result


def _static(ctx: CheckContext) -> None:
    targets_check(ctx.task, ctx.out)
    ctx.out.add("commands", "pass", "compile, correctness and performance commands are set")


class CommandKind:
    """Tasks judged by their own commands (``kind: command``, or a ``commands`` block)."""

    name = "command"
    # The task's scripts import the candidate's code into the process that checks and
    # times it, so a candidate can exit 0 or write its own performance report.
    sealed = False

    def stage(self, task: Task, dest: Path) -> None:
        """The folder as it is: spec, scripts and starting sources."""
        shutil.copytree(task.path, dest, symlinks=True, dirs_exist_ok=True)

    def lay_out(self, ledger: Ledger, req: EvalRequest, dest: Path) -> dict[str, Path]:
        """``task/``, ``base/``, ``cand/`` from digests; editable files or folders from the
        candidate, so an edit anywhere else has no effect."""
        spec = req.task.spec
        task_dir, base, cand = dest / "task", dest / "base", dest / "cand"
        ledger.cas.materialize(req.task_tree, task_dir)
        shutil.copytree(task_dir / spec.source_dir, base, symlinks=True)
        shutil.copytree(task_dir / spec.source_dir, cand, symlinks=True)
        for rel in spec.editable:
            target = cand / rel
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
        ledger.cas.materialize(req.candidate, cand, only=spec.editable)
        return {"task": task_dir, "base": base, "cand": cand}

    def run(self, req: EvalRequest, dest: Path) -> tuple[dict[str, Any], str]:
        """The commands' result in the laid-out ``dest``, and the network they had."""
        spec = req.task.spec.commands
        assert spec is not None  # a command kind's task has commands (TaskSpec checks)
        result = run_commands(
            spec, base=dest / "base", cand=dest / "cand", device=req.device, time=req.time
        )
        return result, "not isolated"

    def judge(self, ledger: Ledger, req: EvalRequest, dest: Path, *, seed: int) -> Verdict:
        """The task's commands judge and time; their result as a verdict."""
        result, network = self.run(req, dest)
        compiled = result["compiled"] or {"ok": False, "error": result["error"], "wall_s": 0.0}
        return Verdict(
            compiled=compiled,
            cases=result["cases"],
            timing=result["timing"],
            device=result["device"],
            flags=[],
            evidence=[],
            correct=bool(result["correct"]),
            error=result["error"],
            network=network,
        )

    def checks(self, ctx: CheckContext) -> list[Stage]:
        """Targets and commands; then the starting sources judged and timed A/A."""
        skip = ctx.task.spec.commands.skip_reason if ctx.task.spec.commands else None

        def platform() -> None:
            ctx.out.add("platform", "skip", skip or "")

        def evaluator() -> None:
            baseline_checks(ctx, what="the task's own commands", noise_fix=NOISE_FIX)

        stages: list[Stage] = [("static", lambda: _static(ctx))]
        if skip:
            stages.append(("platform", platform))
        elif not ctx.quick:
            stages.append(("evaluator", evaluator))
        return stages
