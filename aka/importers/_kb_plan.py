"""The plan for a KernelBench problem: what the probe found, decided into shapes or a refusal.

Pure, so it is tested on its own: :func:`plan` takes the probe's analysis and CPU run
and gives the shapes and devices to write, or why the problem is imported GPU-only or
refused, with the fix (:func:`refusal_fix` words it from the error). Its notes
(:func:`precision_note`, :func:`widened_note`) are also what the task's instructions say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aka.importers._common import Status
from aka.importers._kb_cpu import RANDOM_FORWARD
from aka.importers._kb_meta import SEVERAL_OUTPUTS
from aka.importers._kb_probe import GPU_ELEMENTS
from aka.importers._kb_stress import CASES as STRESS_CASES

Stress = tuple[tuple[str, tuple[tuple[int, float], ...]], ...]

NETWORK_ERRORS = ("huggingface", "offline mode", "couldn't connect", "connection",
                  "name resolution", "network is unreachable", "urlopen")  # fmt: skip


def refusal_fix(error: str, beside: Path | None = None) -> str:
    """The fix for a problem that does not run, from what went wrong (``beside``: the
    problem's folder, where a module it imports may sit)."""
    missing = re.search(r"No module named '([\w.]+)'", error)
    if missing:
        top = missing.group(1).split(".")[0]
        sibling = _sibling(beside, top)
        if sibling is not None:
            return (
                f"inline {sibling.name} (beside the problem) into the problem file: a task "
                "holds the problem file alone, and its processes import nothing from the "
                "folder it came from"
            )
        return (
            f"install {top} where aka runs (pip install {top}): the evaluation processes "
            "import the problem file too"
        )
    if SEVERAL_OUTPUTS.split(" (")[0] in error:
        return (
            "return one tensor from forward (the output to check; a second one is a task "
            "of its own, or torch.cat them if they are one result)"
        )
    if re.search(r"get_(init_)?inputs\(\) returned a \w+, not a list", error):
        return (
            "return a list of the forward's inputs from get_inputs() (return [x, y]) and a "
            "list of Model's arguments from get_init_inputs(), as KernelBench problems do"
        )
    if any(w in error.lower() for w in NETWORK_ERRORS):
        return (
            "the problem fetches files from the network (the Hugging Face Hub) as it is "
            "built, and aka reads problems offline so that a task never depends on what a "
            "server returns: download them once into the local cache (`huggingface-cli "
            "download MODEL`, or run the file once with the network), then import again"
        )
    return (
        "the file must import and build its inputs with only torch installed; "
        "run it with `python FILE` to see the error"
    )


@dataclass(frozen=True)
class Plan:
    """Shapes and devices for one problem, and the line that says so."""

    status: Status
    detail: str
    fix: str = ""
    shapes: dict[str, list[dict[str, int]]] | None = None
    devices: tuple[str, ...] = ("cuda",)
    widened: tuple[tuple[int, float, float], ...] = ()
    """(input, low, high): inputs drawn from [low, high) instead of upstream's [0, 1)
    (:func:`aka.importers._kb_cpu.widened_inputs`)."""
    stress: Stress = ()
    """(case name, ((input, value), ...)) for each held-out stress case the CPU run found
    (:data:`aka.importers._kb_stress.CASES`)."""
    precision: str = ""
    """:func:`precision_note`, when the file draws half-precision inputs."""
    module_calls: tuple[str, ...] = ()
    """The torch functions the modules Model holds stand for (``self.conv(x)`` runs
    ``torch.convolution``): forbidden beside those forward's source names."""


def with_stress(shapes: list[dict[str, int]], cpu_run: dict[str, Any]) -> list[dict[str, int]]:
    """Held-out ``shapes`` followed by the first of them marked as each stress case the
    CPU run found (:mod:`aka.importers._kb_stress`)."""
    if not shapes:
        return shapes
    marked = [{**shapes[0], case.key: 1} for case in STRESS_CASES if cpu_run.get(case.name)]
    return [*shapes, *marked]


def stress_of(cpu_run: dict[str, Any]) -> Stress:
    """The stress cases of a CPU run's result, in :data:`STRESS_CASES`' order."""
    return tuple(
        (case.name, tuple((int(i), float(v)) for i, v in cpu_run[case.name]))
        for case in STRESS_CASES if cpu_run.get(case.name)
    )  # fmt: skip


FIX_RANDOM = (
    "draw the random tensors in get_inputs() (or once in __init__, under the weight seed) "
    "and pass them to forward"
)
FIX_SIZES = (
    "give each size a module-level name (batch_size = 128) that get_inputs() and "
    "get_init_inputs() use, so it can be scaled"
)


def _sibling(folder: Path | None, module: str) -> Path | None:
    """The module ``module`` as a file or package in ``folder``, if it is there."""
    if folder is None:
        return None
    for found in (folder / f"{module}.py", folder / module / "__init__.py"):
        if found.is_file():
            return found if found.name != "__init__.py" else found.parent
    return None


def plan(
    analysis: dict[str, Any], cpu_run: dict[str, Any], *, cpu_possible: bool,
    beside: Path | None = None,
) -> Plan:  # fmt: skip
    """Decide the task's shapes from what the problem built (pure: tested on its own),
    with the torch functions its modules stand for (``beside``: the problem's folder,
    for the fix of a refusal)."""
    if "error" in analysis:
        error = str(analysis["error"])
        return Plan("refused", error, refusal_fix(error, beside))
    decided = _shapes_plan(analysis, cpu_run, cpu_possible=cpu_possible)
    return replace(
        decided, module_calls=tuple(analysis.get("module_calls", ())),
        precision=precision_note(analysis),
    )  # fmt: skip


def _shapes_plan(analysis: dict[str, Any], cpu_run: dict[str, Any], *, cpu_possible: bool) -> Plan:
    """:func:`plan` for a problem that ran."""
    movers: dict[str, int] = analysis.get("tuning", analysis["movers"])
    kept = "; ".join(f"{k}: {why}" for k, why in analysis.get("kept", {}).items())
    if not movers:
        why = f"no module-level size moves a tensor dimension (sizes {analysis['sizes']})"
        return Plan("refused", why + (f"; {kept}" if kept else ""), FIX_SIZES)
    if not analysis.get("heldout"):
        return Plan(
            "refused", f"no held-out shape near {movers} builds the problem",
            "make Model accept sizes other than the file's (e.g. odd or 1/8 larger)",
        )  # fmt: skip
    stress = stress_of(cpu_run)
    shapes: dict[str, list[dict[str, int]]] = {
        "tuning": [movers], "heldout": with_stress([analysis["heldout"]], cpu_run),
    }  # fmt: skip
    scaled = (
        f" (upstream {analysis['upstream']}, {analysis['upstream_elements']:,} elements, "
        f"scaled to at most {GPU_ELEMENTS:,}; --upstream-sizes keeps them)"
        if analysis.get("upstream")
        else ""
    )
    detail = f"tuning {movers}{scaled}; held-out {analysis['heldout']}"
    if note := precision_note(analysis):
        detail += f"; {note}"
    widened = tuple((int(i), float(lo), float(hi)) for i, lo, hi in cpu_run.get("widened", ()))
    if widened:
        detail += f"; {widened_note(widened)}"
    if note := stress_note(stress):
        detail += f"; {note}"
    if not cpu_possible:
        return Plan(
            "imported", detail, shapes=shapes, widened=widened, stress=stress
        )
    cpu, cpu_held = analysis.get("cpu"), analysis.get("cpu_heldout")
    if not cpu or not cpu_held:
        why = "no CPU shape small enough builds the problem" if not cpu else (
            f"no CPU held-out shape near {cpu} builds the problem"
        )  # fmt: skip
        return Plan(
            "imported GPU-only", why, FIX_SIZES, shapes=shapes, stress=stress
        )
    if RANDOM_FORWARD in cpu_run.get("error", ""):  # no device makes it checkable
        return Plan("refused", cpu_run["error"], FIX_RANDOM)
    if "error" in cpu_run:
        why = f"the reference fails on the CPU shapes {cpu}, {cpu_held}: {cpu_run['error']}"
        return Plan("imported GPU-only", why, "", shapes=shapes)
    shapes |= {"cpu": [cpu], "cpu_heldout": with_stress([cpu_held], cpu_run)}
    passed = analysis.get("cpu_degenerate")
    over = f" (not {passed}, where the output does not depend on the inputs)" if passed else ""
    return Plan(
        "imported", f"{detail}; cpu {cpu}{over}", shapes=shapes, devices=("cuda", "cpu"),
        widened=widened, stress=stress,
    )  # fmt: skip


HALF = ("float16", "bfloat16")


def precision_note(analysis: dict[str, Any]) -> str:
    """What the import line and the instructions say when get_inputs() draws half
    precision: the task casts its inputs to float32 (the reference runs in float64) and
    checks at float32's tolerance, so a kernel written for the file's dtype is judged in
    float32."""
    half = [d for d in analysis.get("input_dtypes", ()) if d in HALF]
    if not half:
        return ""
    return (
        f"get_inputs() draws {' and '.join(half)} inputs: the task checks float32 (inputs "
        "cast to float32, the reference in float64, float32's tolerance)"
    )


def widened_note(widened: tuple[tuple[int, float, float], ...]) -> str:
    """What widening did, in the words of the import line and the task's instructions."""
    which = ", ".join(f"input {i} from [{lo:g}, {hi:g})" for i, lo, hi in widened)
    return (
        f"get_inputs()'s {which} (x -> low + (high - low) * x): upstream's torch.rand values "
        "lie in [0, 1), where returning the input is a correct answer"
    )


def stress_note(stress: Stress) -> str:
    """What the stress cases do, in the words of the import line and the instructions
    (empty when there is none)."""
    how = {case.name: case.how for case in STRESS_CASES}
    cases = [", ".join(f"input {i} {how[name]} {v:g}" for i, v in values) for name, values in stress]
    if not cases:
        return ""
    return (
        f"held-out checks also draw get_inputs()'s {'; '.join(cases)} ("
        + ("one case" if len(cases) == 1 else "a case each")
        + "), where the problem's own float32 code still meets the tolerance"
    )
