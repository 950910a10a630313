"""Task validation: deterministic checks that a task folder is sound before agents see it.

A task that a null answer can pass poisons every reward computed on it, so each task is
checked, without any model, for: a valid spec whose files exist; target symbols that
exist in the editable files; tunables that name module-level constants; forbidden names
that resolve (a typo forbids nothing); a deterministic reference whose output depends on
the seed and on every input; null answers (zeros, empty, garbage, a copy of an input, a
bfloat16-rounded answer on float32) that fail the tolerance; and, through the real
evaluator on the chosen device, a baseline that compiles and passes on the tuning and
held-out shapes, a zeros submission that the evaluator rejects, and an A/A timing of the
baseline against itself whose speedup stays within a noise band. An optional review by
an agent adds its opinion as a separate check labelled ``review`` that never decides
``ok``. Every result is a :class:`aka.events.TaskValidated` event.

The reference-side checks follow ``tools/task_check.py``; :func:`null_answers`,
:func:`passes` and :func:`downgrade_passes` are the shared versions.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from aka import events as ev
from aka.config import ArmConfig, TimingSettings
from aka.errors import AkaError
from aka.eval import EvalRequest, evaluate, forbidden_uses
from aka.heldout import baseline_task
from aka.tasks import Task, Tolerance, load_task
from aka_ledger import Ledger

AA_BAND = {"cuda": 0.05, "cpu": 0.5}
"""A/A timing band: the baseline against itself must land within 1 ± band (geomean)."""

Status = str  # "pass" | "fail" | "skip" | "warn"


@dataclass
class TaskValidation:
    """Every check of one task; ``ok`` ignores review checks and warnings."""

    key: str
    checks: list[ev.CheckResult] = field(default_factory=list)
    task_tree: str | None = None
    eval_ids: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No deterministic check failed."""
        return not any(c.status == "fail" and not c.review for c in self.checks)

    def add(self, name: str, status: Status, detail: str = "", *, review: bool = False) -> None:
        """Record one check."""
        self.checks.append(
            ev.CheckResult(name=name, status=status, detail=detail, review=review)  # type: ignore[arg-type]
        )


# -- reference-side checks (shared with tools/task_check.py) --------------------------------


def load_module(path: Path) -> ModuleType:
    """Import a file under a name unique to its path, so same-named files never clash."""
    digest = hashlib.blake2s(str(path.resolve()).encode(), digest_size=6).hexdigest()
    name = f"_aka_validate_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def passes(out: Any, ref: Any, tol: Tolerance) -> bool:
    """Whether ``out`` is a finite tensor of ``ref``'s shape within ``tol`` (the evaluator's rule)."""
    import torch

    if type(out) is not torch.Tensor or tuple(out.shape) != tuple(ref.shape):
        return False
    o, r = out.detach().cpu().double(), ref.detach().cpu().double()
    if not bool(torch.isfinite(o).all()):
        return False
    return bool(torch.allclose(o, r, atol=tol.atol, rtol=tol.rtol))


def null_answers(inputs: tuple[Any, ...], ref: Any, seed: int) -> dict[str, Any]:
    """Outputs a cheating or broken kernel could return; each must fail the tolerance."""
    import torch

    ref_d = ref.detach().cpu().double()
    g = torch.Generator().manual_seed(10_000 + seed)
    scale = float(ref_d.abs().max()) + 1.0 if ref_d.numel() else 1.0
    nulls = {
        "zeros": torch.zeros_like(ref_d),
        "empty": torch.empty(0, dtype=torch.float64),
        "garbage": torch.rand(ref_d.shape, generator=g, dtype=torch.float64) * scale,
    }
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.numel() == ref_d.numel():
            nulls[f"input_copy_{i}"] = x.detach().cpu().double().reshape(ref_d.shape)
    return nulls


def downgrade_passes(ref: Any, tol: Tolerance) -> bool:
    """Whether the reference rounded to bfloat16 passes ``tol`` (real-valued outputs only)."""
    import torch

    ref_d = ref.detach().cpu().double()
    if not ref_d.is_floating_point() or bool((ref_d == ref_d.round()).all()):
        return False
    return passes(ref_d.to(torch.bfloat16), ref_d, tol)


def _clone(xs: tuple[Any, ...]) -> tuple[Any, ...]:
    import torch

    return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in xs)


def _reference_checks(task: Task, device: str, out: TaskValidation) -> None:
    """Determinism, seed and input dependence, null answers: in this process, on ``device``."""
    import torch

    spec = task.spec
    runs_here = ("cpu" if device == "cpu" else "cuda") in spec.devices
    shapes = spec.shapes.for_device(device) + spec.shapes.for_device(device, heldout=True)
    if not runs_here:  # e.g. a CUDA-only task checked on a CPU: its smallest GPU shape
        shapes = [min(spec.shapes.tuning, key=lambda s: _volume(s))]
    ref_mod = load_module(task.path / spec.reference)
    call: Callable[..., Any] = ref_mod.reference
    problems: dict[str, list[str]] = {}
    ignored_inputs: set[int] = set()
    for shape in shapes:
        for dname in spec.dtypes:
            dtype, tol = getattr(torch, dname), spec.tolerances[dname]
            where = f"{shape} {dname}"
            seeds = [ref_mod.make_inputs(shape, dtype, device, s) for s in range(2)]
            kw = shape if spec.pass_shape else {}
            ref0 = call(*_clone(seeds[0]), **kw)
            if not torch.equal(ref0, call(*_clone(seeds[0]), **kw)):
                problems.setdefault("reference_deterministic", []).append(where)
            if torch.equal(ref0, call(*_clone(seeds[1]), **kw)):
                problems.setdefault("output_depends_on_seed", []).append(where)
            for i, x in enumerate(seeds[0]):
                if isinstance(x, torch.Tensor) and not torch.equal(x, seeds[1][i]):
                    swapped = _clone((*seeds[0][:i], seeds[1][i], *seeds[0][i + 1 :]))
                    if torch.equal(ref0, call(*swapped, **kw)):
                        ignored_inputs.add(i)
            for label, null in null_answers(seeds[0], ref0, 0).items():
                name = "null_input_copy" if label.startswith("input_copy") else f"null_{label}"
                if passes(null, ref0, tol):
                    problems.setdefault(name, []).append(f"{where} ({label} passes)")
                else:
                    problems.setdefault(name, [])
            if dtype == torch.float32 and downgrade_passes(ref0, tol):
                problems.setdefault("precision_downgrade", []).append(where)
    names = ["reference_deterministic", "output_depends_on_seed", "null_zeros", "null_empty"]
    names += ["null_garbage", "null_input_copy", "precision_downgrade"]
    for name in names:
        bad = problems.get(name)
        if name == "null_input_copy" and bad is None:
            out.add(name, "skip", "no input has as many elements as the output")
        elif bad:
            out.add(name, "fail", f"fails on {len(bad)} case(s), e.g. {bad[0]}")
        else:
            out.add(name, "pass", f"{len(shapes)} shape(s) x {len(spec.dtypes)} dtype(s)")
    if ignored_inputs:
        out.add(
            "output_depends_on_inputs",
            "warn",
            f"changing input(s) {sorted(ignored_inputs)} alone never changes the output",
        )
    else:
        out.add("output_depends_on_inputs", "pass", "every tensor input changes the output")


def _volume(shape: dict[str, int]) -> int:
    n = 1
    for v in shape.values():
        n *= v
    return n


# -- static checks -----------------------------------------------------------------------


def _py_symbols(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _static_checks(task: Task, out: TaskValidation) -> None:
    """Targets exist, tunables are constants with listed values, forbidden names resolve."""
    spec = task.spec
    src = task.path / spec.source_dir
    texts = {rel: (src / rel).read_text(errors="replace") for rel in spec.editable}
    missing = []
    for target in spec.targets:
        found = any(
            target in _py_symbols(text)
            if rel.endswith(".py")
            else re.search(rf"\b{re.escape(target)}\s*\(", text)
            for rel, text in texts.items()
        )
        if not found:
            missing.append(target)
    if not spec.targets:
        out.add("targets_exist", "warn", "the task names no target symbols")
    elif missing:
        out.add("targets_exist", "fail", f"not defined in {spec.editable}: {missing}")
    else:
        out.add("targets_exist", "pass", f"{spec.targets}")
    if spec.commands is not None:
        out.add("commands", "pass", "compile, correctness and performance commands are set")
        return  # the task's own scripts choose cases and judge; no shapes or forbidden list
    out.add(*_tunables(task))
    local = {
        f.stem: _py_symbols(f.read_text(errors="replace"))
        for f in src.glob("*.py")
        if f.name not in spec.editable
    }
    unresolved = [name for name in spec.forbidden if not _resolves(name, local)]
    if unresolved:
        out.add("forbidden_resolve", "fail", f"these forbid nothing (no such name): {unresolved}")
    else:
        out.add("forbidden_resolve", "pass" if spec.forbidden else "skip", f"{spec.forbidden}")
    out.add("heldout_shapes", *_heldout_shapes(task))
    ref_src = (task.path / spec.reference).read_text(errors="replace")
    flagged = forbidden_uses(spec.reference, ref_src, spec.forbidden)
    if not spec.forbidden:
        out.add("null_reference_call", "skip", "the task forbids nothing")
    elif flagged:
        out.add(
            "null_reference_call",
            "pass",
            f"a copy of the reference is flagged: {flagged[0].evidence()}",
        )
    else:
        out.add(
            "null_reference_call",
            "warn",
            "a copy of the reference uses none of the forbidden names; a candidate could submit it",
        )


def _tunables(task: Task) -> tuple[str, Status, str]:
    entry = task.path / task.spec.source_dir / task.spec.entry_file
    if not task.spec.tunables:
        return "tunables", "skip", "no tunables"
    consts: dict[str, object] = {}
    for node in ast.parse(entry.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            consts.update((t.id, node.value.value) for t in node.targets if isinstance(t, ast.Name))
    bad = []
    for name, values in task.spec.tunables.items():
        value = consts.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value not in values:
            bad.append(f"{name}={value!r} (allowed {values})")
    if bad:
        return "tunables", "fail", f"not a module-level int among the listed values: {bad}"
    return "tunables", "pass", f"{sorted(task.spec.tunables)}"


def _resolves(dotted: str, local: dict[str, set[str]]) -> bool:
    """Whether a dotted name names a module or an attribute of one.

    ``local`` maps the task's own non-editable modules to their top-level symbols (a
    task may forbid ``problem.Model``, which is importable only beside the candidate).
    """
    parts = dotted.split(".")
    if parts[0] in local:
        return len(parts) == 1 or parts[1] in local[parts[0]]
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        except Exception:
            return True  # importable but broken here (e.g. needs a GPU): not a typo
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


# -- checks through the real evaluator -------------------------------------------------------

ZEROS_WRAPPER = """

import torch as _aka_null_torch

_aka_null_original = {symbol}


def {symbol}(*args, **kwargs):
    return _aka_null_torch.zeros_like(_aka_null_original(*args, **kwargs))
"""


def _trees(ledger: Ledger, task: Task) -> dict[str, str]:
    """Candidate trees: the baseline, and (when the entry file is editable Python) zeros."""
    import shutil
    import tempfile

    spec = task.spec
    src = task.path / spec.source_dir
    present = [p for p in spec.editable if (src / p).is_file()]
    trees = {"baseline": ledger.cas.snapshot(src, paths=present)}
    if spec.entry_file in spec.editable and spec.entry_file.endswith(".py"):
        with tempfile.TemporaryDirectory(prefix="aka-null-") as tmp:
            for rel in present:
                (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / rel, Path(tmp) / rel)
            entry = Path(tmp) / spec.entry_file
            entry.write_text(entry.read_text() + ZEROS_WRAPPER.format(symbol=spec.entry_symbol))
            trees["zeros"] = ledger.cas.snapshot(Path(tmp), paths=present)
    return trees


def _heldout_shapes(task: Task) -> tuple[Status, str]:
    """Held-out shapes exist for every device the task runs on, unseen, with the same names."""
    problems, counts = [], []
    for dev in task.spec.devices:
        tuning = task.spec.shapes.for_device(dev)
        held = task.spec.shapes.for_device(dev, heldout=True)
        field_name = "shapes.cpu_heldout" if dev == "cpu" else "shapes.heldout"
        keys = {frozenset(s) for s in tuning}
        if not held:
            problems.append(f"{field_name} is empty")
        elif odd := [s for s in held if frozenset(s) not in keys]:
            problems.append(f"{field_name} {odd} use other size names than the tuning shapes")
        elif seen := [s for s in held if s in tuning]:
            problems.append(f"{field_name} {seen} are also tuning shapes (agents see them)")
        elif any(v <= 0 for s in held for v in s.values()):
            problems.append(f"{field_name} sizes must be positive")
        counts.append(f"{dev}: {len(held)}")
    if problems:
        return "fail", "; ".join(problems)
    return "pass", f"held-out shapes ({', '.join(counts)}), none among the tuning shapes"


def _aa_noise(ledger: Ledger, run_id: str, eval_id: str, device: str) -> tuple[Status, str]:
    """The baseline timed against itself: its geomean speedup must be within the band."""
    import math

    shapes = [
        s
        for e in ledger.events(run_id=run_id, types=["KernelTimed"])
        if isinstance(e.payload, ev.KernelTimed) and e.payload.eval_id == eval_id
        for s in e.payload.shapes
    ]
    if not shapes:
        return "skip", "no timing recorded"
    geo = math.exp(sum(math.log(s.speedup) for s in shapes) / len(shapes))
    band = AA_BAND["cpu" if device == "cpu" else "cuda"]
    covered = sum(s.speedup_ci[0] <= 1.0 <= s.speedup_ci[1] for s in shapes)
    detail = (
        f"A/A speedup {geo:.3f} (band 1±{band}); CI covers 1 on {covered}/{len(shapes)} shape(s)"
    )
    if abs(math.log(geo)) <= math.log(1 + band):
        return "pass", detail
    return ("warn" if device == "cpu" else "fail"), detail


def _command_checks(task: Task, device: str, out: TaskValidation) -> None:
    """A command task: its scripts pass the starting sources, and time them A/A within the band."""
    import math
    import shutil
    import tempfile

    from aka.command_tasks import run_commands

    cmds = task.spec.commands
    assert cmds is not None
    if cmds.skip_reason:
        out.add("platform", "skip", cmds.skip_reason)
        return
    with tempfile.TemporaryDirectory(prefix="aka-validate-") as tmp:
        base, cand = Path(tmp) / "base", Path(tmp) / "cand"
        shutil.copytree(task.path, base)
        shutil.copytree(task.path, cand)
        result = run_commands(cmds, base=base, cand=cand, device=device, time=True, rounds=2)
    if not result["correct"]:
        out.add("baseline_passes", "fail", str(result["error"]))
        return
    out.add("baseline_passes", "pass", "the task's compile and correctness commands pass")
    speedups = [t["pair"]["speedup"] for t in result["timing"]]
    if not speedups:
        out.add("timing_noise", "fail", str(result["error"]))
        return
    geo = math.exp(sum(math.log(x) for x in speedups) / len(speedups))
    band = AA_BAND["cpu" if device == "cpu" else "cuda"]
    ok = abs(math.log(geo)) <= math.log(1 + band)
    detail = f"A/A speedup {geo:.3f} over {len(speedups)} case(s) (band 1±{band})"
    out.add("timing_noise", "pass" if ok else ("warn" if device == "cpu" else "fail"), detail)


def _evaluator_checks(
    ledger: Ledger,
    task: Task,
    *,
    device: str,
    run_id: str,
    timing: TimingSettings,
    out: TaskValidation,
) -> None:
    from aka.orchestrator import harness_digest

    assert out.task_tree is not None
    if task.spec.commands is not None:
        _command_checks(task, device, out)
        return
    if ("cpu" if device == "cpu" else "cuda") not in task.spec.devices:
        for name in (
            "baseline_passes",
            "timing_noise",
            "baseline_passes_heldout",
            "null_zeros_evaluated",
        ):
            out.add(
                name, "skip", f"the task does not run on {device} (devices {task.spec.devices})"
            )
        return
    harness = harness_digest(ledger)

    def run(cand: str, *, heldout: bool = False, time: bool = False) -> ev.Scored:
        req = EvalRequest(
            task=baseline_task(task) if cand == trees["baseline"] else task, task_tree=out.task_tree or "", candidate=cand, harness=harness,
            device=device, policy="agentkernelarena", timing=timing, purpose="validate",
            heldout=heldout, time=time,
        )  # fmt: skip
        scored = evaluate(ledger, run_id, None, req)
        out.eval_ids.append(scored.eval_id)
        return scored

    trees = _trees(ledger, task)
    base = run(trees["baseline"], time=True)
    if base.compiled and base.correct:
        out.add("baseline_passes", "pass", f"compiles and passes on {device} tuning shapes")
        out.add("timing_noise", *_aa_noise(ledger, run_id, base.eval_id, device))
    else:
        out.add("baseline_passes", "fail", f"compiled={base.compiled}: {base.error}")
        out.add("timing_noise", "skip", "the baseline does not pass")
    if any(c.name == "heldout_shapes" and c.status == "pass" for c in out.checks):
        held = run(trees["baseline"], heldout=True)
        ok = held.compiled and held.correct
        out.add("baseline_passes_heldout", "pass" if ok else "fail", "" if ok else str(held.error))
    else:
        out.add("baseline_passes_heldout", "skip", "no valid held-out shapes")
    if "zeros" in trees:
        null = run(trees["zeros"])
        rejected = not null.correct
        out.add(
            "null_zeros_evaluated",
            "pass" if rejected else "fail",
            "the evaluator rejects a zeros submission"
            if rejected
            else "a zeros submission scored correct",
        )
    else:
        out.add("null_zeros_evaluated", "skip", "the entry file is not editable Python")


# -- review by an agent (an opinion, never a deterministic check) ----------------------------

REVIEW_FILE = "review.json"
REVIEW_PROMPT = """You are reviewing a GPU kernel task folder (this directory) before agents are
asked to solve it. Read task.yaml, the reference module and the starting sources. Judge
whether a wrong or trivial kernel could pass (null outputs, tolerances too loose, inputs
that make the output constant), whether the instructions are clear and match the
reference, and whether the held-out shapes test generalization.

Write your verdict to {review_file} in this directory as JSON:
{{"verdict": "pass" or "fail", "notes": "one paragraph"}}
Do not edit any other file.
"""


class _Quiet:
    def emit(self, item: object) -> None:
        """Reviews are not recorded item by item; the verdict is the result."""


def review_task(task: Task, arm: ArmConfig) -> tuple[Status, str]:
    """Ask an agent (any adapter) for its opinion of ``task``; returns (status, notes)."""
    import json
    import shutil
    import tempfile

    from aka.agent import AgentRequest, AgentSettings, get_agent

    agent = get_agent(arm.agent, where="--review")
    with tempfile.TemporaryDirectory(prefix="aka-review-") as tmp:
        ws = Path(tmp) / "task"
        shutil.copytree(task.path, ws)
        request = AgentRequest(
            workspace=ws,
            prompt=REVIEW_PROMPT.format(review_file=REVIEW_FILE),
            settings=AgentSettings(
                model=arm.model,
                effort=arm.effort,
                timeout_seconds=arm.timeout_seconds,
                extra=dict(arm.options),
            ),
            task_name=task.name,
        )
        outcome = agent.run(request, _Quiet())
        verdict = ws / REVIEW_FILE
        if not verdict.is_file():
            return "warn", f"the agent wrote no {REVIEW_FILE} (status {outcome.status})"
        try:
            doc = json.loads(verdict.read_text())
            status = "pass" if doc["verdict"] == "pass" else "fail"
            return status, str(doc.get("notes", ""))[:2000]
        except (ValueError, KeyError, TypeError):
            return "warn", f"{REVIEW_FILE} is not {{'verdict': 'pass'|'fail', 'notes': ...}}"


# -- driver ----------------------------------------------------------------------------------


def new_validation_id() -> str:
    """The run id validation events are recorded under."""
    import secrets

    return f"validate-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


def default_timing(device: str) -> TimingSettings:
    """A short budget on the CPU (speed is not measured there), the default on a GPU."""
    return TimingSettings(max_time_s=0.2, min_samples=5) if device == "cpu" else TimingSettings()


def validate_task(
    ledger: Ledger,
    folder: Path,
    *,
    root: Path | None,
    device: str,
    run_id: str,
    timing: TimingSettings | None = None,
    review: ArmConfig | None = None,
    quick: bool = False,
) -> TaskValidation:
    """Run every check on one task folder and record a ``TaskValidated`` event.

    ``quick`` leaves out the checks that go through the evaluator (a few child
    processes per task), keeping the static and reference checks.

    A stage that crashes (a reference that raises, a broken import) is a failed check
    naming the stage, never an exception out of here.
    """
    key = folder.resolve().relative_to(root.resolve()).as_posix() if root else folder.name
    out = TaskValidation(key=key)
    try:
        task = load_task(folder, root=root)
    except AkaError as exc:
        out.add("schema", "fail", exc.render())
        return _record(ledger, run_id, device, out)
    out.add("schema", "pass", f"{task.spec.type}, backend {task.spec.backend}")
    out.task_tree = ledger.cas.snapshot(task.path)
    stages: list[tuple[str, Callable[[], None]]] = [("static", lambda: _static_checks(task, out))]
    if task.spec.commands is None:
        stages.append(("reference", lambda: _reference_checks(task, device, out)))
    if not quick:
        budget = timing or default_timing(device)

        def through_evaluator() -> None:
            _evaluator_checks(ledger, task, device=device, run_id=run_id, timing=budget, out=out)

        stages.append(("evaluator", through_evaluator))
    for stage, fn in stages:
        try:
            fn()
        except Exception as exc:
            out.add(f"{stage}_stage", "fail", f"{type(exc).__name__}: {exc}"[:2000])
    if review is not None:
        try:
            status, notes = review_task(task, review)
        except Exception as exc:
            status, notes = "warn", f"review failed: {type(exc).__name__}: {exc}"
        out.add(f"review:{review.agent}", status, notes, review=True)
    return _record(ledger, run_id, device, out)


def _record(ledger: Ledger, run_id: str, device: str, out: TaskValidation) -> TaskValidation:
    ledger.append(
        ev.TaskValidated(
            task=out.key,
            task_tree=out.task_tree,
            device=device,
            ok=out.ok,
            checks=out.checks,
            eval_ids=out.eval_ids,
        ),
        run_id=run_id,
        durable=True,
    )
    return out


def task_folders(root: Path, selectors: list[str]) -> list[Path]:
    """Folders holding a task.yaml under the selectors (all under ``root`` when none).

    Folders are found without loading the spec, so a broken spec is reported as a
    failed ``schema`` check rather than stopping the whole validation.
    """
    from aka.errors import InputError
    from aka.tasks import TASK_FILE

    targets = [root / s for s in selectors] or [root]
    found: list[Path] = []
    for target in targets:
        if not target.exists():
            raise InputError(
                f"task selector {target} does not exist",
                fix=f"use a path relative to {root}; `aka tasks list` shows them",
            )
        found += [p.parent for p in sorted(target.rglob(TASK_FILE))]
    if not found:
        raise InputError(f"no task.yaml under {targets}", fix="check --root and the selectors")
    return sorted(set(found))
