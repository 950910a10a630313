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
"""

from __future__ import annotations

import ast
import json
import re
import time
from pathlib import Path
from typing import Any

from aka.childjson import read_request, report
from aka.importers._kb_modules import equivalents, torch_modules
from aka.importers._templates import KERNELBENCH_LOADER
from aka.tolerance import effective_atol, repeats, rms

MARK = "@@aka-kb-probe@@ "
MIN_SIZE = 8
"""Sizes below this are kept as written (reduction dims, tiny batches, small windows)."""
NEVER_SCALE = frozenset({
    "kernel", "kernels", "ksize", "pad", "pads", "padding", "paddings", "stride", "strides",
    "dilation", "dilations", "dilate", "group", "groups", "pool", "pooling", "window",
    "windows", "scale", "scales", "scaling", "factor", "factors", "axis", "axes", "eps",
    "epsilon",
})  # fmt: skip
"""Words of names that size a window or pick an axis: scaling them changes the problem
(:func:`window_hyperparameter`)."""
NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
"""The words of a name: split at ``_``, at capitals and at digits (``kernelSize``,
``dim1``)."""


def window_hyperparameter(name: str) -> bool:
    """Whether the size ``name`` (``layer_sizes[1]`` is ``layer_sizes``) is a window
    hyperparameter or an axis: one of its words is in :data:`NEVER_SCALE`, or ends in
    ``pool`` or ``kernel`` (``maxpool_size``). Whole words, not letters: ``timesteps``
    holds ``eps`` and ``padded_features`` holds ``pad``, and both are real sizes."""
    words = [w.lower() for w in NAME_WORDS.findall(name.partition("[")[0])]
    return any(w in NEVER_SCALE or w.endswith(("pool", "kernel")) for w in words)


CPU_ELEMENTS = 1 << 16
"""At most this many elements (inputs, parameters, outputs) in a CPU shape."""
GPU_ELEMENTS = 1 << 28
"""At most this many elements (inputs, parameters, outputs) in a GPU tuning shape, unless
the upstream sizes are asked for: upstream KernelBench sizes reach billions of elements
(a 4096 x 393216 ReLU), which every correctness call, its float64 reference and the
checker's hand-over would move many times per evaluation."""
TOLERANCE = {"atol": 0.0, "rtol": 1e-4, "rms_atol": 1e-4}
"""The float32 tolerance of an imported problem (:mod:`aka.tolerance`). Its absolute part
follows the output's scale: KernelBench outputs range from ~1e-5 (a softmax over 24576
columns, a norm over millions of elements) to ~1e3 (a matmul), and one absolute atol
either lets zeros pass the first or fails honest float32 on the second."""
LIVE_ELEMENTS = 1 << 22
"""Shapes up to this many elements are run for real while CPU shapes are sought, to pass
over those whose output no longer depends on the inputs."""
CPU_SECONDS = 5.0
"""A CPU shape whose float64 forward takes longer than this makes the task GPU-only."""

Shape = dict[str, int]


_LOADED: dict[str, Any] = {}


def _loaded() -> dict[str, Any]:
    """The task's loader as this process runs it: ``load_problem`` and the float64 helpers
    the reference uses (``float64_model``, ``forward64``), so the probe runs the problem
    exactly as the reference will."""
    if not _LOADED:
        namespace: dict[str, Any] = {"__name__": "_aka_kb_loader", "__file__": __file__}
        exec(compile(KERNELBENCH_LOADER, "kb_loader.py", "exec"), namespace)
        _LOADED.update(namespace)
    return _LOADED


def _loader() -> Any:
    return _loaded()["load_problem"]


def _float64(module: Any) -> Any:
    """The problem's Model built from its init inputs, in float64 as the reference has it."""
    with _placed("cpu"):
        return _loaded()["float64_model"](module.Model(*module.get_init_inputs())).eval()


def _forward(model: Any, args: list[Any]) -> Any:
    with _placed("cpu"):
        return _loaded()["forward64"](model, args)


def _placed(device: str) -> Any:
    """The loader's ``placed``: the problem's own CUDA placements land on ``device``."""
    return _loaded()["placed"](device)


def _inputs(module: Any, seed: int) -> list[Any]:
    """``get_inputs()`` on the CPU as the reference draws them for ``seed`` (the problem's
    own seeding folded in), floating ones in float64."""
    import torch

    with _loaded()["seeded"](seed), _placed("cpu"):
        return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                for x in module.get_inputs()]  # fmt: skip


def roots(source: str | bytes) -> set[str]:
    """Names assigned at module level from constants alone (no other module-level name).

    ``source`` as bytes is decoded as Python decodes a file (a BOM, a declared encoding)."""
    bound: set[str] = set()
    found: set[str] = set()
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            used = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
            (found.update if not used & bound else found.difference_update)(names)
            bound |= names
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            found.discard(stmt.target.id)
    return found


def size_values(module: Any, names: set[str]) -> Shape:
    """``name`` for an int, ``name[i]`` for each int of a list or tuple of ints."""
    out: Shape = {}
    for name in sorted(names):
        value = vars(module).get(name)
        if type(value) is int:
            out[name] = value
        elif isinstance(value, list | tuple) and value and all(type(v) is int for v in value):
            out.update({f"{name}[{i}]": v for i, v in enumerate(value)})
    return out


def _shapes(xs: Any) -> list[Any]:
    import torch

    if isinstance(xs, torch.Tensor):
        return [list(xs.shape)]
    if isinstance(xs, list | tuple):
        return [s for x in xs for s in _shapes(x)]
    return []


def _numel(shapes: list[list[int]]) -> int:
    total = 0
    for s in shapes:
        n = 1
        for d in s:
            n *= d
        total += n
    return total


NOT_A_LIST = "returned a {what}, not a list"
"""How a get_inputs() or get_init_inputs() that returns no sequence is refused
(:func:`aka.importers._kernelbench.refusal_fix` gives the fix)."""


def listed(values: Any, function: str) -> list[Any]:
    """What ``get_inputs()`` (or ``get_init_inputs()``) returned, as the list the forward
    (or Model) is called with: a generator's items, once (taking its shapes consumed it,
    and the forward then ran on nothing).

    Raises:
        TypeError: a dict (its keys would be the inputs), a string or a lone tensor.
    """
    import torch

    if isinstance(values, dict | str | bytes | torch.Tensor):
        what = type(values).__name__
        raise TypeError(f"{function}() {NOT_A_LIST.format(what=what)}")
    return list(values)


def _on_meta() -> Any:
    """Factories, and the problem's own placements (on CUDA or the CPU), land on meta."""
    import contextlib

    import torch

    stack = contextlib.ExitStack()
    stack.enter_context(torch.device("meta"))
    stack.enter_context(_placed("meta"))
    return stack


def _model_on_meta(module: Any, init: Any) -> Any:
    """The problem's Model on meta: built there, or where its ``__init__`` reads values
    (``torch.linspace(...).item()`` for drop-path rates, as Swin models do), built on the
    CPU and moved to meta, so its forward can still check a shape without running it.
    Built outside the meta placement: inside it, the CPU build's factories would have
    been moved to meta again."""
    import torch

    try:
        with _on_meta():
            return module.Model(*init)
    except RuntimeError as exc:
        if "meta" not in str(exc) or any(isinstance(x, torch.Tensor) for x in init):
            raise
    with torch.device("cpu"), _placed("cpu"), _loaded()["seeded"](0):
        return module.Model(*init).to("meta")


SEVERAL_OUTPUTS = "forward returns several outputs ({what}); aka checks one output tensor"
"""Why a problem whose forward returns a tuple or a list is refused: the evaluation
compares one output tensor with the reference's."""


def describe(load: Any, path: Path, shape: Shape, *, modules: bool = False) -> dict[str, Any]:
    """What the problem builds at ``shape`` on meta: shapes per stage, or where it failed.

    ``modules``: also the torch functions the torch modules Model holds stand for
    (``module_calls``, :func:`aka.importers._kb_modules.equivalents`), which the task
    forbids beside those its forward's source names. ``returns``: the forward's output
    type when it is not a tensor."""
    import torch

    out: dict[str, Any] = {"stages": []}
    try:
        module = load(shape, path)
        out["stages"].append("load")
        with _on_meta():
            init = listed(module.get_init_inputs(), "get_init_inputs")
            inputs = listed(module.get_inputs(), "get_inputs")
        out["inputs"] = _shapes(inputs)
        out["dtypes"] = sorted({str(x.dtype).removeprefix("torch.") for x in inputs
                                if isinstance(x, torch.Tensor) and x.is_floating_point()})  # fmt: skip
        out["stages"].append("inputs")
        model = _model_on_meta(module, init)
        out["params"] = [list(p.shape) for p in (*model.parameters(), *model.buffers())]
        if modules:
            out["module_calls"] = equivalents(torch_modules(model))
        out["stages"].append("model")
        with _on_meta(), torch.no_grad():
            result = model(*inputs)
        out["outputs"] = _shapes(result)
        if not isinstance(result, torch.Tensor):
            out["returns"] = type(result).__name__
        out["stages"].append("forward")
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:300]
    out["elements"] = sum(_numel(out.get(k, [])) for k in ("inputs", "params", "outputs"))
    return out


def _signature(d: dict[str, Any]) -> str:
    return json.dumps([d.get("inputs"), d.get("params"), d.get("outputs")])


def _valid(d: dict[str, Any], base: dict[str, Any]) -> bool:
    """Gets as far as the file's own sizes got, with no empty input."""
    return d["stages"] == base["stages"] and all(_numel([s]) > 0 for s in d.get("inputs", []))


def heldout_candidates(tuning: Shape) -> list[Shape]:
    """About 1/8 larger: odd sizes first, then multiples of 8, then the first size alone."""
    first = next(iter(tuning))
    return [
        {k: (v + max(1, v // 8)) | 1 for k, v in tuning.items()},
        {k: (v + v // 8 + 7) // 8 * 8 for k, v in tuning.items()},
        {k: (v + max(1, v // 8)) | 1 if k == first else v for k, v in tuning.items()},
        {k: v + 8 if k == first else v for k, v in tuning.items()},
    ]


def shrink(tuning: Shape, fits: Any) -> Shape | None:
    """A CPU shape: the largest size halved, or every size when halving it alone breaks
    the problem (sizes tied to each other), until ``fits`` accepts the shape. ``fits``
    returns True (small enough), False (too big) or None (the problem breaks). None when
    no shape fits.
    """
    shape, frozen = dict(tuning), set()
    for _ in range(128):
        if fits(shape):
            return shape
        free = [k for k in shape if k not in frozen and shape[k] > 4]
        if not free:
            return None
        k = max(free, key=lambda n: shape[n])
        steps = [{**shape, k: max(4, shape[k] // 2)}, {n: max(4, v // 2) for n, v in shape.items()}]
        shape_next = next((s for s in steps if fits(s) is not None), None)
        if shape_next is None:
            frozen.add(k)
        else:
            shape = shape_next
    return None


def cpu_heldout_candidates(cpu: Shape) -> list[Shape]:
    """Near the CPU shape and unseen: +1 (odd), +2, then the first size alone."""
    first = next(iter(cpu))
    return [
        {k: v + 1 if v >= 4 else v for k, v in cpu.items()},
        {k: v + 2 if v >= 4 else v for k, v in cpu.items()},
        {k: v + 1 if k == first else v for k, v in cpu.items()},
    ]


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


def depends_on_inputs(load: Any, path: Path, shape: Shape) -> bool:
    """Whether the problem's float64 output at ``shape`` (a CPU shape) changes with the
    seed its inputs are drawn from (:func:`aka.tolerance.repeats`); a shape that fails to
    run answers True (it is rejected elsewhere)."""

    outs = []
    try:
        module = load(shape, path)
        with _loaded()["seeded"](0):
            model = _float64(module)
        for seed in (0, 1):
            outs.append(_forward(model, _inputs(module, seed)))
    except Exception:
        return True
    return not repeats(*outs)


def _copy_passes(x: Any, out: Any) -> bool:
    """Whether returning input ``x`` as it is passes :data:`TOLERANCE` against ``out``."""
    import torch

    if not isinstance(out, torch.Tensor) or x.numel() != out.numel() or not out.numel():
        return False
    r = out.detach().double()
    atol = effective_atol(TOLERANCE, rms(r))
    return bool(torch.allclose(x.double().reshape(r.shape), r, atol=atol, rtol=TOLERANCE["rtol"]))


RANGES = ((-1.0, 1.0), (-4.0, 4.0))
"""Ranges tried, in order, for an input whose [0, 1) values make a copy of it correct:
[-1, 1) tells ReLU, ELU and their kin from a copy; a clamp to [-1, 1] (HardTanh) needs
values beyond it."""


def widened_inputs(model: Any, inputs: list[Any], out: Any) -> dict[int, tuple[float, float]]:
    """Inputs to draw from a wider range than upstream's [0, 1): index -> (low, high).

    ``torch.rand`` inputs are non-negative, so for ReLU, HardTanh, ELU and their kin the
    output *is* the input and copying it is a correct answer. Such an input (values in
    [0, 1], and copying it passes) is mapped to the first of :data:`RANGES` on which the
    output is finite and copying the input fails: the problem then tells a kernel from a
    copy. A problem that stays a copy on every range (a BatchNorm with fresh statistics)
    is left as it is, for validation to report.
    """
    import torch

    picks: dict[int, tuple[float, float]] = {}
    for i, x in enumerate(inputs):
        if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()):
            continue
        if float(x.min()) < 0 or float(x.max()) > 1 or not _copy_passes(x, out):
            continue
        for low, high in RANGES:
            moved = [*inputs[:i], low + (high - low) * x, *inputs[i + 1 :]]
            again = _forward(model, moved)
            if (
                isinstance(again, torch.Tensor)
                and bool(torch.isfinite(again).all())
                and not _copy_passes(moved[i], again)
            ):
                picks[i] = (low, high)
                break
    return picks


RANDOM_FORWARD = (
    "two forwards on the same inputs differ: the forward draws random numbers (an initial "
    "state made with torch.randn in forward), so no output can be checked against it"
)
"""Why a problem whose forward is random cannot be a task, whatever the device."""


def run_on_cpu(path: Path, shapes: list[Shape]) -> dict[str, Any]:
    """Each shape's float64 forward on the CPU, as the reference runs it: seconds or the
    error, and which inputs to widen (:func:`widened_inputs`, from the first shape)."""

    load = _loader()
    seconds: list[float] = []
    widened: dict[int, tuple[float, float]] = {}
    for shape in shapes:
        try:
            module = load(shape, path)
            inputs = _inputs(module, 0)
            with _loaded()["seeded"](0):
                model = _float64(module)
            t0 = time.perf_counter()
            out = _forward(model, inputs)
            seconds.append(time.perf_counter() - t0)
            if not repeats(out, _forward(model, inputs)):
                return {"error": f"at {shape}: {RANDOM_FORWARD}"}
            if len(seconds) == 1:
                widened = widened_inputs(model, inputs, out)
        except Exception as exc:
            return {"error": f"at {shape}: {type(exc).__name__}: {exc}"[:300]}
        if seconds[-1] > CPU_SECONDS:
            return {"error": f"at {shape}: one float64 forward took {seconds[-1]:.1f} s"}
    return {"seconds": seconds, "widened": [[i, lo, hi] for i, (lo, hi) in widened.items()]}


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
