"""The evaluator: rebuild a fresh directory from digests, run the candidate elsewhere, record.

Only three things reach an evaluation: the task folder (harness side: the reference and
the starting sources) from the task's tree digest, and the candidate's *editable* files
from the candidate's tree digest. Anything else the agent wrote (a result file, an
edited reference, a ``torch.py``) is simply not there.

The task's kind (:func:`aka.kinds.kind_of`) lays that directory out and judges the
candidate there; for a kernel task that is :func:`aka.eval._pipeline.run_job`: a
candidate process that never sees a reference output, then a checker process that
alone computes them, with hack detectors at every step (docs/security.md). Whatever the
kind, only the events written here count.
"""

from __future__ import annotations

import json
import secrets
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aka import events as ev
from aka.eval import _detect
from aka.eval._pipeline import Verdict
from aka.eval._request import EvalRequest
from aka.kinds import kind_of
from aka.scoring import Measurements, score
from aka.timing import device_kind
from aka_ledger import Ledger

__all__ = ["EvalRequest", "evaluate", "harness_paths"]


def harness_paths() -> tuple[Path, list[str]]:
    """The evaluator's own code (what judges), relative to the ``aka`` package."""
    root = Path(__file__).resolve().parent.parent
    return root, [
        "eval",
        "timing",
        "kinds",
        "scoring.py",
        "tasks.py",
        "kind_specs.py",
        "backends.py",
    ]


def _timings(ledger: Ledger, timing: list[dict[str, Any]]) -> list[ev.ShapeTiming]:
    out = []
    for item in timing:
        pair = item["pair"]
        raw = ledger.cas.put(json.dumps(pair, sort_keys=True).encode())
        b, c = pair["baseline"], pair["candidate"]
        out.append(
            ev.ShapeTiming(
                shape=item["shape"],
                dtype=item["dtype"],
                baseline_s=b["median_s"],
                candidate_s=c["median_s"],
                baseline_ci=(b["ci_low_s"], b["ci_high_s"]),
                candidate_ci=(c["ci_low_s"], c["ci_high_s"]),
                speedup=pair["speedup"],
                speedup_ci=tuple(pair["speedup_ci"]),
                samples=min(b["n"], c["n"]),
                method=pair["method"],
                raw=raw,
            )
        )
    return out


def _scored(req: EvalRequest, eval_id: str, verdict: Verdict, timed: bool) -> ev.Scored:
    """The Scored event: speedups through the noise band, flags and evidence named."""
    timed_ok = verdict.correct and (timed or not req.time)
    speedups, in_noise = _detect.aggregate_speedups(verdict.timing if timed else [])
    m = Measurements(
        compiled=bool(verdict.compiled["ok"]),
        correct=timed_ok,
        speedups=speedups,
        hack_flags=verdict.flags,
    )
    s = score(m, req.policy)
    return ev.Scored(
        eval_id=eval_id,
        try_no=req.try_no,
        purpose=req.purpose,
        compiled=m.compiled,
        correct=bool(s.components["correct"]) and timed_ok,
        speedup=s.speedup,
        score=s.score,
        policy=s.policy.name,
        policy_version=s.policy.version,
        policy_spec=s.policy.to_json(),
        components={**s.components, "shapes_in_noise_band": float(in_noise)},
        hack_flags=verdict.flags,
        evidence=verdict.evidence,
        network=verdict.network,
        error=verdict.error,
    )


def evaluate(
    ledger: Ledger,
    run_id: str,
    attempt_key: str | None,
    req: EvalRequest,
    *,
    vet: Callable[[ev.Scored], None] | None = None,
) -> ev.Scored:
    """Evaluate one candidate and append its events; returns the Scored event.

    Event order: EvaluationStarted (a durable intent) → Compiled → CorrectnessChecked →
    KernelTimed → Scored (durable result). A failed stage ends the chain at Scored. Any
    hack flag makes the evaluation incorrect; CorrectnessChecked and Scored name the
    flags and the evidence. Timings are recorded only for correct candidates.

    ``vet`` sees the Scored before it is recorded; what it raises leaves the chain
    without a result (the attempt's boundary decides what that was: a task that fails
    itself is not the candidate's score, :class:`aka.taskhealth.TaskHealth`).
    """
    eval_id = uuid.uuid4().hex
    seed = req.seed if req.seed is not None else secrets.randbelow(2**31)

    def emit(event: ev.EventModel) -> None:
        ledger.append(event, run_id=run_id, attempt_key=attempt_key)

    emit(
        ev.EvaluationStarted(
            try_no=req.try_no,
            eval_id=eval_id,
            purpose=req.purpose,
            turn=req.turn,
            candidate=req.candidate,
            task=req.task_tree,
            harness=req.harness,
            device=req.device,
        )
    )
    kind = kind_of(req.task)
    with tempfile.TemporaryDirectory(prefix="aka-eval-") as tmp:
        kind.lay_out(ledger, req, Path(tmp))
        verdict = kind.judge(ledger, req, Path(tmp), seed=seed)
    compiled = verdict.compiled
    emit(
        ev.Compiled(
            eval_id=eval_id,
            ok=compiled["ok"],
            error=compiled.get("error"),
            wall_s=compiled["wall_s"],
        )
    )
    if compiled["ok"]:
        emit(
            ev.CorrectnessChecked(
                eval_id=eval_id,
                ok=verdict.correct,
                cases=[ev.CaseResult(**c) for c in verdict.cases],
                hack_flags=verdict.flags,
                evidence=verdict.evidence,
                heldout_failed=verdict.heldout_failed,
            )
        )
    timings = _timings(ledger, verdict.timing) if verdict.correct else []
    if timings:
        fp = ledger.cas.put(json.dumps(verdict.device, sort_keys=True).encode())
        kind_fp = ledger.cas.put(json.dumps(device_kind(verdict.device), sort_keys=True).encode())
        emit(ev.KernelTimed(eval_id=eval_id, shapes=timings, device=fp, device_kind=kind_fp))
    scored = _scored(req, eval_id, verdict, bool(timings))
    if vet is not None:
        vet(scored)
    emit(scored)
    return scored
