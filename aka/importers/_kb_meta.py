"""A KernelBench problem built on torch's meta device: the shapes it makes, or where it fails.

:func:`describe` runs ``get_inputs()``, ``get_init_inputs()``, ``Model(...)`` and its
forward on meta, which records shapes without allocating, so a size can be tried at any
value for free; the probe compares these descriptions to tell which sizes move a
dimension and which candidate shapes still build (:func:`_valid`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aka.importers._kb_loader import _loaded, _placed
from aka.importers._kb_modules import equivalents, torch_modules
from aka.importers._kb_sizes import Shape


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
(:func:`aka.importers._kb_plan.refusal_fix` gives the fix)."""


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
