"""The library functions task code calls, as they were before candidate code ran.

The reference's ``make_inputs`` and the task's baseline look their library functions up
at every call (``torch.where``, ``torch.empty_like``, ``torch.Generator``, a tensor's
methods), so a candidate that rebinds one reaches code the harness runs outside its own
calls. Every attack of the second red-team round on the CPU went through one: a
``torch.where`` whose stand-in computed the candidate's answers while the evaluator drew
inputs (even with its kernels' file names forged, or launched past Triton's ``run``), and
a ``torch.empty_like`` whose stand-in, called inside the baseline's timed window, drew the
candidate's next inputs itself and computed them there, so that the candidate's own calls
were copies (6.4-13.2x for kernels worth 1.8-2.5x). The functions are snapshotted once
the harness has set up and before the candidate is imported; one bound to anything else
at a check is ``library_patched`` (:func:`replaced_since`).

A tripwire: code in the process can restore a function before each check. It catches
the rebinding that stays in place between the candidate's calls, which is what reaching
the harness's own work takes.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

__all__ = ["NAMESPACES", "replaced_since", "resolve", "snapshot_library"]

NAMESPACES = (
    "torch", "torch.nn.functional", "torch.Tensor", "torch._C.TensorBase", "torch.linalg",
    "torch.special", "torch.fft", "torch.nn.init", "torch.random", "numpy", "numpy.random",
)  # fmt: skip
"""Where task code's library functions live (module or class namespaces)."""

Snapshot = dict[str, dict[str, Any]]


def resolve(dotted: str) -> Any:
    """``torch._C.TensorBase``, ``torch.backends.cuda.matmul`` and the like: the longest
    importable module, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(dotted)


def _bound(value: Any) -> bool:
    """Whether a namespace entry is code (what a rebinding would replace)."""
    return callable(value) or isinstance(value, staticmethod | classmethod | property)


SETTLED_BY = ("torch._inductor.config",)
"""Imported before the snapshot: torch._dynamo, which it pulls in, rebinds
``torch.manual_seed`` to a wrapper of its own when imported, and the poisoned runs
import it anyway (``torch.use_deterministic_algorithms``; warm workers' zygote preloads
it)."""


def snapshot_library(namespaces: tuple[str, ...] = NAMESPACES) -> Snapshot:
    """Each namespace's code entries, by name (the objects themselves, kept alive, so
    an identity never stands for another object), once the library has done its own
    rebinding (:data:`SETTLED_BY`)."""
    for name in SETTLED_BY:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    out: Snapshot = {}
    for name in namespaces:
        try:
            space = vars(resolve(name))
        except (ImportError, AttributeError, TypeError):
            continue
        out[name] = {k: v for k, v in space.items() if _bound(v)}
    return out


def replaced_since(before: Snapshot) -> list[str]:
    """``namespace.name`` for each entry of ``before`` now bound to another object or
    gone (entries added since are the library's lazy imports, not replacements)."""
    found: list[str] = []
    missing = object()
    for name, kept in before.items():
        try:
            space = vars(resolve(name))
        except (ImportError, AttributeError, TypeError):
            found.append(name)
            continue
        found += [f"{name}.{k}" for k, v in kept.items() if space.get(k, missing) is not v]
    return found
