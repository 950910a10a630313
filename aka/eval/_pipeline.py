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

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka.eval import _detect, _spares
from aka.eval._outputs import output_dir
from aka.eval._proc import CHILD_TIMEOUT_S, child_env, run_child, start
from aka.eval._profiling import request_field
from aka.eval._static import forbidden_uses, hack_findings

__all__ = ["CHILD_TIMEOUT_S", "Job", "Verdict", "child_env", "run_child", "run_job"]

# Set to 0 in the evaluator's environment to run candidates with the network (the
# variable itself never reaches the candidate: AKA_* is not passed on).
ISOLATE_ENV = "AKA_EVAL_ISOLATE_NETWORK"
CHILD, CHECKER = _spares.MODULES


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
        **request_field(),
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
        **request_field(),
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
    checker = start(CHECKER, cwd=scratch, device=job.device, isolate=job.isolate_network)
    try:
        with output_dir(root) as out:
            request = candidate_request(job, root, out)
            t0 = time.perf_counter()
            if split_stages:
                result = _staged(request, cwd=scratch, device=job.device)
            else:
                cand = start(CHILD, cwd=scratch, device=job.device, isolate=job.isolate_network)
                # The next evaluation's processes start up while this candidate loads,
                # compiles and checks; the gate stops them while it times.
                _spares.refill(job.device, job.isolate_network)
                cand.send(request, scratch)
                result = cand.collect(CHILD_TIMEOUT_S)
            t1 = time.perf_counter()
            checked: dict[str, Any] = {"results": [], "flags": [], "work": []}
            if result.get("records"):
                checker.send(checker_request(job, root, out, result), scratch)
                checked = checker.collect_trusted(CHILD_TIMEOUT_S)
            result["stage_s"] = result.get("stage_s") or stage_times(
                result.get("marks") or [], t0, t1
            )
            result["stage_s"]["checker"] = time.perf_counter() - t1
    finally:
        if not checker.released:
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
