"""The evaluation pipeline without the ledger: two processes, every detector, one verdict.

:func:`run_job` takes a laid-out evaluation directory (``task/``, ``base/``, ``cand/``)
and a :class:`Job` (plain values), runs the candidate process (:mod:`aka.eval._candidate`),
then, after it and everything it started are gone, the checker process
(:mod:`aka.eval._checker`), and merges the findings of every detector (static, in the
candidate process, in the checker, and here on the parent's clock) into a
:class:`Verdict`. It imports neither pydantic nor the ledger, so the GPU red-team script
runs it on a bare device machine; :func:`aka.eval.evaluate` wraps it with events.
"""

from __future__ import annotations

import dataclasses
import os
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aka.backends import backend
from aka.eval import _alone, _foreign, _native, _ops, _plan, _replay, _sites, _spares
from aka.eval._judge import forbidden_ops, judge_records, parent_flags, timing_results
from aka.eval._memory import short_of_memory
from aka.eval._outputs import output_dir
from aka.eval._proc import CHILD_TIMEOUT_S, Collected, child_env
from aka.eval._requests import candidate_request, checker_request, task_files
from aka.eval._static import forbidden_uses, hack_findings
from aka.eval._wire import CandidateReport, CandidateRequest, CheckerReport
from aka.eval._workers import Workers, current

_T = TypeVar("_T")

__all__ = [
    "CHILD_TIMEOUT_S",
    "Job",
    "Verdict",
    "child_env",
    "run_job",
]

CHILD, CHECKER = _spares.MODULES


def default_memory_cap() -> int | None:
    """Address-space cap for CPU evaluations: three quarters of the machine's memory."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError):
        return None


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
    isolate_network: bool = True
    timeout_s: float = CHILD_TIMEOUT_S
    hide: tuple[str, ...] = ()
    max_file_bytes: int = 16 << 30
    max_memory_bytes: int | None = field(default_factory=lambda: default_memory_cap())
    contain: bool = True
    drawer: bool = False  # on the CPU: inputs drawn in a process apart (aka.eval._drawer)
    timer: bool = False  # with the drawer: the baseline timed in a process apart too
    operators: str = "any"
    allowed_operators: list[str] = field(default_factory=list)
    caches: dict[str, str] | None = None
    """The candidate process's kernel cache folders, in place of those its tree shares
    with every evaluation of the same code (:func:`aka.eval._heldout.heldout_job`)."""


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
    heldout_failed: bool = False
    """The held-out check (:func:`aka.eval._heldout.with_heldout`) failed: its cases, flags or process. What
    it found is kept here for an audit and never told to the policy."""
    stage_s: dict[str, float] = field(default_factory=dict)
    """Wall seconds per stage: ``admit`` (waiting to start beside other evaluations of the
    device), the candidate process's (:func:`stage_times`), ``checker``, the verdict's own
    work after the processes in four: ``settle_alone`` (the baseline's checked calls in a
    process of their own, once per task and settings), ``settle_replay`` (a second timing
    that settles a suspected replay), ``settle_rebase`` (the baseline's clean timing, once
    per task and settings, and a second timing of the candidate where the baseline ran
    slower beside it) and ``settle`` (the rest); and ``heldout`` (the held-out check's
    processes, :func:`aka.eval._heldout.with_heldout`). Disjoint, so they sum to at most the whole."""


@dataclass
class CandidateRun:
    """The candidate process(es) of one evaluation, as the verdict is built from them.

    ``flags`` holds the tripwires' findings (the process's report) and the parent's (a
    tampered channel, a process that outlived it); ``marks`` the frames sent along the
    way with the parent's arrival times; ``error`` why there is no report, if none came.
    """

    compiled: dict[str, Any] | None
    error: str | None
    flags: list[dict[str, str]]
    notes: list[str]
    network: str
    contained: str | None
    marks: list[dict[str, Any]]
    stage_s: dict[str, float] = field(default_factory=dict)
    crowded: bool = False
    """Whether another evaluation ran on the device beside this one (evaluations in flight)."""

    @classmethod
    def of(cls, got: Collected) -> CandidateRun:
        """From what the parent collected of one candidate process."""
        r = got.report if isinstance(got.report, CandidateReport) else None
        return cls(
            compiled=r.compiled if r else None,
            error=got.error or (r.error if r else None),
            flags=(list(r.flags) if r else []) + got.flags,
            notes=list(r.notes) if r else [],
            network=got.network,
            contained=r.contained if r else None,
            marks=got.marks,
        )


def checker_report(got: Collected) -> CheckerReport:
    """The checker's report with the parent's findings added, or its failure as one."""
    if isinstance(got.report, CheckerReport):
        return dataclasses.replace(got.report, flags=got.report.flags + got.flags)
    return CheckerReport(results=[], flags=got.flags, work=[], error=got.error)


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


def _sealed(
    job: Job,
    request: CandidateRequest,
    out: Path,
    *,
    cwd: Path,
    stages: tuple[str, ...],
    workers: Workers,
) -> tuple[CandidateRun, dict[str, Any]]:
    """One candidate process over ``stages`` of the plan; its run and the assembly."""
    plan = _plan.make_plan(job.shapes, job.dtypes, seed=job.seed, seeds=job.seeds,
                           time=job.time, timing=job.timing, stages=stages)  # fmt: skip
    out.mkdir(exist_ok=True)
    cand = workers.start(CHILD, cwd=cwd, device=job.device, isolate=job.isolate_network,
                         cand=Path(request.cand_dir), caches=job.caches)  # fmt: skip
    # The next evaluation's processes start up while this candidate loads, compiles
    # and checks (forked behind it, not before its request); the gate stops them while
    # it times.
    refilled = workers.refill_behind(job.device, job.isolate_network)
    try:
        stdlib = sorted({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})
        task, editable = task_files(job, Path(request.cand_dir))
        # The baseline's copies too: its calls walk the same frames as the candidate's
        # (their findings let go), and a candidate calling into them is judged like any
        # task code.
        task += tuple(f for f in task_files(job, Path(request.base_dir))[0] if f not in task)
        # The reference too: the core records what ``make_inputs`` runs (a torch name the
        # candidate rebound runs its code there), and the reference's own calls are task
        # code.
        task += (str(Path(request.task_dir) / job.reference),)
        text = plan.text(task, tuple(stdlib), tuple(_ops.forbidden_operators(job.forbidden)),
                         editable, tuple(job_allowed(job)))  # fmt: skip
        cand.send(dataclasses.replace(request, out_dir=str(out)), cwd, text)
        got = cand.collect(job.timeout_s)
    finally:
        refilled()
    assembled = _plan.assemble(plan, got.core)
    for rec in assembled["records"]:  # outputs are digested under this process's key
        rec["digest_key"] = cand.key.hex()
    return CandidateRun.of(got), assembled


def job_allowed(job: Job) -> set[str]:
    """The operators the job's candidate calls may run (empty: any but the forbidden)."""
    return _ops.allowed_operators(job.operators, job.allowed_operators, job.forbidden)


def _merge(parts: list[tuple[CandidateRun, dict[str, Any]]], subdirs: list[str]
           ) -> tuple[CandidateRun, dict[str, Any]]:  # fmt: skip
    """The naive path's processes as one run: records renamed into their folders."""
    first, last = parts[0][0], parts[-1][0]
    merged: dict[str, Any] = {"records": [], "twins": [], "timing": [], "ops": [], "code": [],
                              "flags": [], "notes": [], "threads": [], "error": None}  # fmt: skip
    for (run, asm), sub in zip(parts, subdirs, strict=True):
        base = len(merged["records"])
        for rec in asm["records"]:
            merged["records"].append(
                {**rec, "file": f"{sub}/{rec['file']}" if rec.get("file") else None}
            )
        merged["twins"] += [(a + base, b + base) for a, b in asm["twins"]]
        for key in ("timing", "ops", "code", "flags", "threads"):
            merged[key] += asm[key]
        merged["notes"] += [n for n in asm.get("notes") or [] if n not in merged["notes"]]
        merged["error"] = merged["error"] or asm["error"] or run.error
    run = dataclasses.replace(
        last, compiled=first.compiled, network=first.network,
        flags=[f for r, _ in parts for f in r.flags], notes=[n for r, _ in parts for n in r.notes],
    )  # fmt: skip
    return run, merged


def native_backend(name: str) -> bool:
    """Whether the task's candidates may build native code (CUDA extensions, torch's
    compiler), whose libraries keep processes, threads and files of their own."""
    return backend(name).builds_native


def run_processes(
    job: Job,
    root: Path,
    *,
    workers: Workers | None = None,
    split_stages: bool = False,
    alone: bool = False,
) -> tuple[CandidateRun, dict[str, Any], CheckerReport]:
    """The candidate process(es), then the checker process; returns all three results.

    The checker starts at once (importing torch overlaps the candidate's run) but gets
    its request, and computes reference outputs, only after the candidate process and
    everything it started are gone. ``split_stages`` runs a process per stage instead
    of one (the naive path ``aka bench eval`` compares against); ``alone``: with no other
    evaluation on the device meanwhile (:meth:`Workers.evaluating`).
    """
    workers = workers or current()
    asked = time.perf_counter()
    with workers.evaluating(job.device, alone=alone) as share:
        admitted = time.perf_counter() - asked
        run, assembled, checked = _processes(job, root, workers, split_stages)
    run.crowded = share.crowded
    run.stage_s = {"admit": admitted, **run.stage_s}
    return run, assembled, checked


def _processes(job: Job, root: Path, workers: Workers, split_stages: bool
               ) -> tuple[CandidateRun, dict[str, Any], CheckerReport]:  # fmt: skip
    """:func:`run_processes` inside its evaluation's count of the device's in-flight ones."""
    native = str(_native.ensure_built(job.device))
    scratch = root / "scratch"
    scratch.mkdir(exist_ok=True)
    checker = workers.start(CHECKER, cwd=scratch, device=job.device, isolate=job.isolate_network)
    lease = checker.lease  # this evaluation's hold on it (Workers.done_with)
    profile = workers.switches.profile_dir
    try:
        with output_dir(root) as out:
            request = candidate_request(job, root, out, native, profile,
                                        workers.switches.host_gate)  # fmt: skip
            t0 = time.perf_counter()
            if split_stages:
                stages = [("compile",), ("correctness",), ("timing",)]
                parts, walls = [], {}
                for st in stages:
                    t = time.perf_counter()
                    parts.append(_sealed(job, request, out / st[0], cwd=scratch, stages=st,
                                         workers=workers))  # fmt: skip
                    walls[st[0]] = time.perf_counter() - t
                    res, asm = parts[-1]
                    if not (res.compiled or {}).get("ok") or asm["error"]:
                        break
                result, assembled = _merge(
                    parts, [st[0] for st, _ in zip(stages, parts, strict=False)]
                )
                result.stage_s = walls
            else:
                result, assembled = _sealed(job, request, out / "c", cwd=scratch,
                                            stages=("correctness", "timing"), workers=workers)  # fmt: skip
                assembled["records"] = [
                    {**r, "file": f"c/{r['file']}" if r.get("file") else None}
                    for r in assembled["records"]
                ]
            t1 = time.perf_counter()
            checked = CheckerReport(results=[], flags=[], work=[])
            if assembled["records"]:
                checker.send(checker_request(job, root, out, assembled["records"], profile), scratch)  # fmt: skip
                checked = checker_report(checker.collect_trusted(job.timeout_s))
            result.stage_s = result.stage_s or stage_times(result.marks, t0, t1)
            result.stage_s["checker"] = time.perf_counter() - t1
    finally:
        workers.done_with(checker, lease)
    return result, assembled, checked


def stage_times(marks: list[dict[str, Any]], start: float, end: float) -> dict[str, float]:
    """Wall seconds per stage of the candidate process, from its marks' arrival times.

    ``start``: until the process runs (fork or interpreter start, imports); ``load``:
    reference, baseline and guards; ``compile``: importing and first-calling the
    candidate (CUDA start-up falls here); ``correctness``; ``gate``: waiting for the timing
    gate (other evaluations timing on the device) and the first shape's set-up;
    ``timing`` (every shape, input sets included); ``finish``: timed outputs handed over, exit. A stage the process did
    not reach is left out.
    """
    at: dict[str, float] = {}
    for m in marks:
        if m.get("t") is not None and m.get("name"):
            name = str(m["name"])
            if name != "timing_start" or name not in at:  # the first start, the last end
                at[name] = float(m["t"])
    order = [("start", "started"), ("load", "loaded"), ("compile", "compiled"),
             ("correctness", "checked"), ("gate", "timing_start"),
             ("timing", "timing_end")]  # fmt: skip
    out: dict[str, float] = {}
    last = start
    for stage, name in order:
        if name in at:
            out[stage], last = at[name] - last, at[name]
    out["finish"] = end - last
    return out


def run_job(
    job: Job, root: Path, *, workers: Workers | None = None, split_stages: bool = False
) -> Verdict:
    """Evaluate the candidate laid out under ``root``; every detector's findings merged.

    ``workers``: the process layer to evaluate with (default: this process's,
    :func:`aka.eval._workers.current`).

    An evaluation that ran beside others on its device and failed in a way the others'
    memory can cause (:func:`aka.eval._memory.short_of_memory`) is evaluated again with the device to
    itself, and that verdict stands: a trainer's batch in flight must not score a correct
    kernel 0 because its neighbours held the memory. The candidate gains nothing by
    it: alone, it is judged as one evaluation at a time is.
    """
    verdict, crowded = _evaluate(job, root, workers, split_stages, alone=False)
    reason = short_of_memory(verdict.error, verdict.flags) if crowded else None
    if reason is None:
        return verdict
    again, _ = _evaluate(job, root, workers, split_stages, alone=True)
    again.notes.append(f"evaluated again with the device to itself: beside other "
                       f"evaluations it {reason}")  # fmt: skip
    return again


def _evaluate(job: Job, root: Path, workers: Workers | None, split_stages: bool, *, alone: bool
              ) -> tuple[Verdict, bool]:  # fmt: skip
    """One evaluation of the candidate (:func:`run_job`), and whether it was crowded."""
    static = static_findings(job, root / "cand")
    run, assembled, checked = run_processes(job, root, workers=workers, split_stages=split_stages,
                                            alone=alone)  # fmt: skip
    processes_done = time.perf_counter()
    parts: dict[str, float] = {}

    def part(name: str, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)``, its wall seconds added to the stage ``name`` of the settling."""
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            parts[name] = parts.get(name, 0.0) + time.perf_counter() - t0

    core_ran = bool(assembled["records"]) or bool(assembled["timing"])
    compiled = run.compiled or (
        {"ok": True, "error": None, "wall_s": 0.0}
        if core_ran
        else {"ok": False, "error": run.error, "wall_s": 0.0}
    )
    records = assembled["records"]
    cases, check_flags = judge_records(records, checked, assembled["twins"])
    if compiled.get("ok") and not cases and not run.error:
        assembled["error"] = assembled["error"] or "no correctness case came back"
    for item in assembled["timing"]:  # the device as the checker read it on that device
        item.setdefault("fingerprint", checked.device)
    timing = timing_results(job, assembled["timing"]) if not assembled["error"] else []
    found = static + run.flags + check_flags + list(assembled["flags"])
    plain, sites = _sites.split(assembled["ops"])
    found += forbidden_ops(job.forbidden, plain, strict=bool(job_allowed(job)))
    found += part("settle_alone", _alone.task_site_flags, job, root, sites, workers or current())
    found += _foreign.flags(job.backend, assembled["code"], _foreign.writable_roots(),
                            gpu=job.device.startswith("cuda"), env=_foreign.environment(),
                            own=root)  # fmt: skip
    threads, thread_notes = _plan.thread_flags(assembled["threads"], native_backend(job.backend))
    found += threads
    found += _foreign.refused([compiled.get("error"), *(c.get("error") for c in cases)])
    found += list(checked.flags) if not checked.results else []
    found += parent_flags(job, timing, run.marks, checked.work)
    rebased: list[str] = []
    if timing and cases and not found and all(c["ok"] for c in cases):  # a suspicion is settled
        timing, replayed, rebased, late = part(
            "settle_replay", _alone.settle_replay, job, root, timing, assembled["timing"],
            workers or current())  # fmt: skip
        found += late
    else:  # judged wrong whatever a second timing says
        replayed = _replay.input_replay(assembled["timing"], _replay.ratio_for(job.device))
    found += [{"flag": "input_replay", "evidence": e} for e in replayed]
    if cases and not found and all(c["ok"] for c in cases):  # would be judged correct
        found += part("settle_alone", _alone.output_dtype_flags, job, root, records,
                      workers or current())  # fmt: skip
    if timing and not found and all(c["ok"] for c in cases):  # a speedup would be scored
        timing, slowed, late = part("settle_rebase", _alone.rebase_slowed, job, root, timing,
                                    workers or current())  # fmt: skip
        rebased += slowed
        found += late
    names = sorted({f["flag"] for f in found})
    evidence = list(dict.fromkeys(f"{f['flag']}: {f['evidence']}" for f in found))
    checker_error = checked.error if records else None
    correct = bool(cases) and all(c["ok"] for c in cases) and not names and not checker_error
    correct = correct and not (compiled.get("ok") and assembled["error"] and not run.error)
    error = (
        run.error
        or (assembled["error"] if compiled.get("ok") else None)
        or checker_error
        or compiled.get("error")
        or next((c["error"] for c in cases if not c["ok"]), None)
    )
    if names:
        error = f"hack flags {names}: {'; '.join(evidence)[:1000]}"
    notes = list(run.notes) + rebased + list(assembled.get("notes") or []) + thread_notes
    if run.contained:
        notes.append(f"containment: {run.contained}")
    settled = time.perf_counter() - processes_done - sum(parts.values())
    return Verdict(
        compiled=compiled,
        cases=cases,
        timing=timing,
        device=dict(_alone.device_of(timing)),
        flags=names,
        evidence=evidence,
        correct=correct,
        error=error,
        network=run.network,
        notes=notes,
        stage_s={**run.stage_s, **parts, "settle": settled},
    ), run.crowded
