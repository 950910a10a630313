"""The task's loader (``source/kb_loader.py``) as the probe's process runs it.

The probe builds and runs a problem exactly as the task's reference will: through the
same loader text (:data:`~aka.importers._templates.KERNELBENCH_LOADER`), executed once
per process, whose ``load_problem``, ``placed``, ``seeded``, ``float64_model`` and
``forward64`` the meta description (:mod:`aka.importers._kb_meta`) and the CPU run
(:mod:`aka.importers._kb_cpu`) share.
"""

from __future__ import annotations

from typing import Any

from aka.importers._templates import KERNELBENCH_LOADER

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
