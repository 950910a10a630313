"""The evaluator: rebuild a fresh directory from digests, run the candidate elsewhere, record.

Only three things reach an evaluation: the task folder (harness side: the reference and
the starting sources) from the task's tree digest, and the candidate's *editable* files
from the candidate's tree digest. Anything else the agent wrote (a result file, an
edited reference, a ``torch.py``) is simply not there. The candidate is imported only in
a child process; its result comes back over a pipe, and only the events written here
count.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka import events as ev
from aka.config import TimingSettings
from aka.eval._static import forbidden_uses
from aka.scoring import POLICY_VERSION, Measurements, score
from aka.tasks import Task
from aka_ledger import Ledger

CHILD_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class EvalRequest:
    """What to evaluate and how; everything is a digest or a value."""

    task: Task
    task_tree: str
    candidate: str
    harness: str
    device: str
    policy: str
    timing: TimingSettings
    purpose: str = "final"
    try_no: int = 0
    turn: int = 0
    heldout: bool = False
    time: bool = True
    seed: int | None = None


def harness_paths() -> tuple[Path, list[str]]:
    """The evaluator's own code (what judges), relative to the ``aka`` package."""
    root = Path(__file__).resolve().parent.parent
    return root, ["eval", "timing", "scoring.py", "tasks.py"]


def build_eval_dir(ledger: Ledger, req: EvalRequest, dest: Path) -> dict[str, Path]:
    """Lay out ``task/``, ``base/`` and ``cand/`` under ``dest`` from digests alone."""
    spec = req.task.spec
    task_dir, base, cand = dest / "task", dest / "base", dest / "cand"
    ledger.cas.materialize(req.task_tree, task_dir)
    shutil.copytree(task_dir / spec.source_dir, base)
    shutil.copytree(task_dir / spec.source_dir, cand)
    for rel in spec.editable:
        (cand / rel).unlink(missing_ok=True)
    ledger.cas.materialize(req.candidate, cand, only=spec.editable)
    return {"task": task_dir, "base": base, "cand": cand}


def _child_request(req: EvalRequest, dirs: dict[str, Path], seed: int) -> dict[str, Any]:
    spec = req.task.spec
    return {
        "task_dir": str(dirs["task"]),
        "base_dir": str(dirs["base"]),
        "cand_dir": str(dirs["cand"]),
        "reference": spec.reference,
        "entry_file": spec.entry_file,
        "entry_symbol": spec.entry_symbol,
        "pass_shape": spec.pass_shape,
        "shapes": spec.shapes.for_device(req.device, heldout=req.heldout),
        "dtypes": spec.dtypes,
        "tolerances": {k: v.model_dump() for k, v in spec.tolerances.items()},
        "seeds": spec.seeds,
        "seed": seed,
        "device": req.device,
        "time": req.time,
        "timing": req.timing.model_dump(),
    }


def _die_with_parent() -> None:
    """In the child: get SIGKILL when the evaluator dies, so a killed run leaves no orphan."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_child(
    request: dict[str, Any], *, cwd: Path, device: str, timeout: float = CHILD_TIMEOUT_S
) -> dict[str, Any]:
    """Run the evaluation child; return its result, or a result describing its failure."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AKA_")}
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "aka.eval._child", str(write_fd)],
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
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(request).encode())
    proc.stdin.close()
    with os.fdopen(read_fd, "rb") as channel:
        try:
            stderr = b""
            proc.wait(timeout=timeout)
            payload = channel.read()
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return {
                "compiled": None,
                "cases": [],
                "timing": [],
                "device": {},
                "error": f"evaluation exceeded {timeout:.0f} s",
            }
        finally:
            if proc.stderr is not None:
                stderr = proc.stderr.read()[-4000:]
                proc.stderr.close()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # nothing the candidate started survives
    if not payload:
        tail = stderr.decode(errors="replace").strip().splitlines()[-5:]
        return {
            "compiled": None,
            "cases": [],
            "timing": [],
            "device": {},
            "error": f"evaluation process died (exit {proc.returncode}): {' | '.join(tail)}",
        }
    result: dict[str, Any] = json.loads(payload)
    return result


def _static_findings(req: EvalRequest, cand: Path) -> tuple[list[str], list[str]]:
    flags: list[str] = []
    evidence: list[str] = []
    for rel in req.task.spec.editable:
        path = cand / rel
        if path.suffix == ".py" and path.is_file():
            for f in forbidden_uses(rel, path.read_text(errors="replace"), req.task.spec.forbidden):
                flags.append(f.flag)
                evidence.append(f.evidence())
    return sorted(set(flags)), evidence


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


def evaluate(ledger: Ledger, run_id: str, attempt_key: str | None, req: EvalRequest) -> ev.Scored:
    """Evaluate one candidate and append its events; returns the Scored event.

    Event order: EvaluationStarted (durable intent) → Compiled → CorrectnessChecked →
    KernelTimed → Scored (durable result). A failed stage ends the chain at Scored.
    """
    eval_id = uuid.uuid4().hex
    seed = req.seed if req.seed is not None else secrets.randbelow(2**31)

    def emit(event: ev.EventModel, durable: bool = False) -> None:
        ledger.append(event, run_id=run_id, attempt_key=attempt_key, durable=durable)

    emit(
        ev.EvaluationStarted(
            try_no=req.try_no,
            eval_id=eval_id,
            purpose=req.purpose,
            turn=req.turn,  # type: ignore[arg-type]
            candidate=req.candidate,
            task=req.task_tree,
            harness=req.harness,
            device=req.device,
        ),
        durable=True,
    )
    with tempfile.TemporaryDirectory(prefix="aka-eval-") as tmp:
        dirs = build_eval_dir(ledger, req, Path(tmp))
        flags, evidence = _static_findings(req, dirs["cand"])
        scratch = Path(tmp) / "scratch"
        scratch.mkdir()
        result = run_child(_child_request(req, dirs, seed), cwd=scratch, device=req.device)
    compiled = result.get("compiled") or {"ok": False, "error": result.get("error"), "wall_s": 0.0}
    emit(
        ev.Compiled(
            eval_id=eval_id,
            ok=compiled["ok"],
            error=compiled.get("error"),
            wall_s=compiled["wall_s"],
        )
    )
    cases = [ev.CaseResult(**c) for c in result.get("cases", [])]
    correct = bool(cases) and all(c.ok for c in cases) and not flags
    if compiled["ok"]:
        emit(
            ev.CorrectnessChecked(
                eval_id=eval_id, ok=correct, cases=cases, hack_flags=flags, evidence=evidence
            )
        )
    timings = _timings(ledger, result.get("timing", []))
    if timings:
        fp = ledger.cas.put(json.dumps(result.get("device", {}), sort_keys=True).encode())
        emit(ev.KernelTimed(eval_id=eval_id, shapes=timings, device=fp))
    timed_ok = correct and (bool(timings) or not req.time)
    m = Measurements(
        compiled=bool(compiled["ok"]),
        correct=timed_ok,
        speedups=[t.speedup for t in timings],
        hack_flags=flags,
    )
    s = score(m, req.policy)
    error = (
        result.get("error")
        or compiled.get("error")
        or next((c.error for c in cases if not c.ok), None)
    )
    if flags:
        error = f"hack flags {flags}: {'; '.join(evidence)[:500]}"
    scored = ev.Scored(
        eval_id=eval_id,
        try_no=req.try_no,
        purpose=req.purpose,  # type: ignore[arg-type]
        compiled=m.compiled,
        correct=bool(s.components["correct"]) and timed_ok,
        speedup=s.speedup,
        score=s.score,
        policy=req.policy,
        policy_version=POLICY_VERSION,
        components=s.components,
        hack_flags=flags,
        error=error,
    )
    emit(scored, durable=True)
    return scored
