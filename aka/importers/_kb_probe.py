"""Read a KernelBench problem by running it, in a child process, on torch's meta device.

Sizes in a problem file are written every way Python allows (``N = 2048 * 2``,
``height = width = 256``, ``layer_sizes = [400, 800]``, ``bias_shape = (out_channels,
1, 1)``), so reading literals misses many and scales the wrong ones. Instead the
problem runs here with the loader the task itself uses (:data:`KERNELBENCH_LOADER`):
``get_inputs()``, ``get_init_inputs()``, ``Model(...)`` and its forward run on the meta
device, which records shapes without allocating. A size is scaled only when

- it is a *root*: assigned from constants alone (values computed from other sizes are
  recomputed by the loader, never scaled themselves);
- it is at least :data:`MIN_SIZE` and its name is not a window hyperparameter
  (:func:`window_hyperparameter`: kernel_size, padding, stride, dilation, ...);
- it *moves a dimension*: doubling it alone changes the shape of an input, a parameter,
  a buffer or the output.

Candidate held-out and CPU shapes are accepted only when the problem still builds and
runs on them (on meta), and CPU shapes must hold at most :data:`CPU_ELEMENTS` elements
and run for real in float64 on the CPU. Run as ``python -m aka.importers._kb_probe``
with ``{"path": ...}`` on stdin (through :mod:`aka.childjson`, which caps its memory);
it prints result lines prefixed with :data:`MARK` (the problem's own prints go
elsewhere), first the analysis, then the CPU run, so a parent that times out still has
the analysis.

This module decides (:func:`analyze`) and is the child's entry (:func:`main`); which
sizes scale and the shapes tried are :mod:`aka.importers._kb_sizes`, the problem built
on meta :mod:`aka.importers._kb_meta`, and run on the CPU :mod:`aka.importers._kb_cpu`,
both through the task's loader (:mod:`aka.importers._kb_loader`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aka.childjson import read_request, report
from aka.importers._kb_cpu import (
    CPU_SECONDS,
    RANDOM_FORWARD,
    RANGES,
    TOLERANCE,
    depends_on_inputs,
    run_on_cpu,
    widened_inputs,
)
from aka.importers._kb_loader import _loader
from aka.importers._kb_meta import (
    NOT_A_LIST,
    SEVERAL_OUTPUTS,
    _signature,
    _valid,
    describe,
    listed,
)
from aka.importers._kb_sizes import (
    MIN_SIZE,
    NAME_WORDS,
    NEVER_SCALE,
    Shape,
    cpu_heldout_candidates,
    heldout_candidates,
    roots,
    shrink,
    size_values,
    window_hyperparameter,
)

# The names this module held before its parts moved out stay importable from it, where
# the importer and the tests import them.
__all__ = [
    "CPU_ELEMENTS",
    "CPU_SECONDS",
    "GPU_ELEMENTS",
    "LIVE_ELEMENTS",
    "MARK",
    "MIN_SIZE",
    "NAME_WORDS",
    "NEVER_SCALE",
    "NOT_A_LIST",
    "RANDOM_FORWARD",
    "RANGES",
    "SEVERAL_OUTPUTS",
    "TOLERANCE",
    "Shape",
    "analyze",
    "cpu_heldout_candidates",
    "depends_on_inputs",
    "describe",
    "heldout_candidates",
    "listed",
    "main",
    "roots",
    "run_on_cpu",
    "shrink",
    "size_values",
    "widened_inputs",
    "window_hyperparameter",
]

MARK = "@@aka-kb-probe@@ "

CPU_ELEMENTS = 1 << 16
"""At most this many elements (inputs, parameters, outputs) in a CPU shape."""
GPU_ELEMENTS = 1 << 28
"""At most this many elements (inputs, parameters, outputs) in a GPU tuning shape, unless
the upstream sizes are asked for: upstream KernelBench sizes reach billions of elements
(a 4096 x 393216 ReLU), which every correctness call, its float64 reference and the
checker's hand-over would move many times per evaluation."""
LIVE_ELEMENTS = 1 << 22
"""Shapes up to this many elements are run for real while CPU shapes are sought, to pass
over those whose output no longer depends on the inputs."""


def _movers(
    load: Any, path: Path, sizes: Shape, base: dict[str, Any]
) -> tuple[Shape, dict[str, str]]:
    """Sizes that move a dimension when doubled; sizes that break the problem when
    doubled alone are tried together (a width tied to a channel count)."""
    movers: Shape = {}
    kept: dict[str, str] = {}
    for key, v in sizes.items():
        if v < MIN_SIZE or window_hyperparameter(key):
            continue
        tries = [describe(load, path, {key: v * 2}), describe(load, path, {key: v + 8})]
        ok = [d for d in tries if _valid(d, base)]
        if not ok:
            kept[key] = f"changing it alone breaks the problem ({tries[0].get('error')})"
        elif any(_signature(d) != _signature(base) for d in ok):
            movers[key] = v
        else:
            kept[key] = "no tensor dimension follows it"
    tied = {k: sizes[k] for k, why in kept.items() if why.startswith("changing")}
    if len(tied) > 1:
        together = describe(load, path, {k: v * 2 for k, v in tied.items()})
        if _valid(together, base) and _signature(together) != _signature(base):
            movers |= tied
            for k in tied:
                del kept[k]
    return dict(sorted(movers.items())), kept


def analyze(path: Path, gpu_elements: int | None = GPU_ELEMENTS) -> dict[str, Any]:
    """Tuning, held-out and CPU shapes of the problem at ``path``, with what was decided.

    ``tuning`` is the file's own sizes, or (over ``gpu_elements`` elements in all) those
    sizes shrunk as CPU shapes are until they fit, the file's kept as ``upstream``.
    """
    load = _loader()
    names = roots(path.read_bytes())
    base = describe(load, path, {}, modules=True)
    if "inputs" not in base["stages"]:
        return {"error": f"the problem does not run: {base.get('error')}"}
    if base.get("returns") in ("tuple", "list"):
        return {"error": SEVERAL_OUTPUTS.format(what=base["returns"])}
    sizes = size_values(load({}, path), names)
    movers, kept = _movers(load, path, sizes, base)
    result: dict[str, Any] = {
        "sizes": sizes, "movers": movers, "kept": kept, "base": base,
        "module_calls": base.pop("module_calls", []), "input_dtypes": base["dtypes"],
    }  # fmt: skip
    if not movers:
        return result
    if gpu_elements and base["elements"] > gpu_elements:

        def fits_gpu(shape: Shape) -> bool | None:
            d = describe(load, path, shape)
            return None if not _valid(d, base) else d["elements"] <= gpu_elements

        scaled = shrink(movers, fits_gpu)
        if scaled is not None and scaled != movers:
            result |= {"upstream": movers, "upstream_elements": base["elements"]}
            movers = scaled
    result["tuning"] = movers
    result["heldout"] = next(
        (h for h in heldout_candidates(movers) if _valid(describe(load, path, h), base)), None
    )

    def fits(shape: Shape) -> bool | None:
        d = describe(load, path, shape)
        return None if not _valid(d, base) else d["elements"] <= CPU_ELEMENTS

    degenerate: list[Shape] = []

    def fits_alive(shape: Shape) -> bool | None:
        """As ``fits``, and a shape small enough to run here must keep the output
        input-dependent (checked before it fits: the size that breaks it may be halved
        on the way down)."""
        d = describe(load, path, shape)
        if not _valid(d, base):
            return None
        if d["elements"] <= LIVE_ELEMENTS and not depends_on_inputs(load, path, shape):
            degenerate.append(shape)
            return None
        return bool(d["elements"] <= CPU_ELEMENTS)

    # Shrinking one size while a fixed one stays (512 groups over 512 features) can
    # leave an output that no longer depends on the inputs; such shapes are passed over,
    # unless every shape is like that, and then validation reports the problem.
    cpu = shrink(movers, fits_alive)
    if cpu is not None and degenerate:
        result["cpu_degenerate"] = degenerate[0]
    cpu = cpu or shrink(movers, fits)
    result["cpu"] = cpu
    if cpu is not None:
        result["cpu_heldout"] = next(
            (
                h
                for h in cpu_heldout_candidates(cpu)
                if h != cpu and (d := describe(load, path, h)) and _valid(d, base)
                and d["elements"] <= 2 * CPU_ELEMENTS
            ),
            None,
        )  # fmt: skip
    return result


def main() -> None:
    """Child entry: the request on stdin, result lines on stdout; the problem's prints go to stderr."""
    request = read_request()
    path = Path(request["path"])
    result = analyze(path, request.get("gpu_elements", GPU_ELEMENTS))
    report(MARK, result)
    cpu = [s for s in (result.get("cpu"), result.get("cpu_heldout")) if s]
    if cpu:
        report(MARK, run_on_cpu(path, cpu))


if __name__ == "__main__":
    main()
