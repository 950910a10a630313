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
import functools
import importlib
import operator
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "NAMESPACES", "bind_library", "prime", "rebound_since", "replaced_since", "resolve",
    "snapshot_library",
]  # fmt: skip

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


# ---- every library module's bindings ---------------------------------------------------
#
# The functions above are the ones task code calls by name. Library code the harness runs
# looks up more: ``with torch.device(...)`` in a reference's ``make_inputs`` calls
# ``torch.utils._device._device_constructors()`` on every operator of the draw, and a chain
# of C callables bound there read each drawn tensor and answered it with numpy before the
# candidate's call (8x for a kernel worth 2x, no frame of the candidate's, no operator).
# So every module loaded before the candidate, and every class such a module defines, is
# held too: each binding by identity, compared once the plan has run.

Entry = tuple[str, "dict[str, Any] | type", tuple[str, ...], tuple[Any, ...]]
"""(where, a module's dict or a class, names, values): the module's callables, or every
attribute the class's own dict holds."""
Bindings = list[Entry]
Moved = Callable[[Bindings], list[int]]
"""Which entries hold anything else now: the sealed core's ``moved_bindings`` (borrowed
references: no page of a warm parent's copied in), or :func:`_moved` here."""

_PRIMED: Bindings = []
"""Taken in a warm parent (:func:`prime`), inherited by its children through ``fork`` and
brought up to date in each (:func:`bind_library`)."""
_PRIMED_MODULES: set[str] = set()
"""The modules :data:`_PRIMED` holds."""


def _space(ns: dict[str, Any] | type) -> Mapping[str, Any]:
    return ns if isinstance(ns, dict) else ns.__dict__


def _entry(where: str, ns: dict[str, Any] | type) -> Entry:
    space = _space(ns)
    names = (
        tuple(k for k, v in space.items() if callable(v)) if isinstance(ns, dict) else tuple(space)
    )
    return where, ns, names, tuple(map(space.get, names))


def _take(name: str, module: Any) -> Bindings:
    space = getattr(module, "__dict__", None)
    if not isinstance(space, dict):
        return []
    out = [_entry(name, space)]
    for value in list(space.values()):
        # ``type(value)``, not ``isinstance``: a deprecated object's ``__class__`` warns
        if issubclass(type(value), type) and value.__dict__.get("__module__") == name:
            out.append(_entry(f"{name}.{value.__qualname__}", value))
    return out


def _modules(skip: set[str], task: Callable[[str], bool] | None = None) -> Bindings:
    out: Bindings = []
    for name, module in list(sys.modules.items()):
        if name in skip or name == "__main__":
            continue
        if task is not None and task(str(getattr(module, "__file__", None) or "")):
            continue  # task code: the task-code snapshot's, with its own rules
        out += _take(name, module)
    return out


def prime() -> None:
    """Take every loaded module's bindings now (a warm parent, before it forks)."""
    _PRIMED.clear()
    _PRIMED_MODULES.clear()
    bind_library()


def _moved(entries: Bindings) -> list[int]:
    isnot = operator.is_not
    return [
        i for i, (_, ns, names, values) in enumerate(entries)
        if any(map(isnot, map(_space(ns).get, names), values))
    ]  # fmt: skip


def bind_library(moved: Moved = _moved, task: Callable[[str], bool] | None = None) -> Bindings:
    """Every loaded module's callable bindings and its classes' attributes, as they are
    now: what was primed (taken again where it moved since, before any candidate code),
    and every module loaded since, but those whose file ``task`` says is the task's.

    Updated in place, never copied: in a child of a warm parent, a new list of the primed
    entries would write every entry's reference count, copying their pages in from the
    parent (``tools/bench_bindings.py`` times a child's view)."""
    held = _PRIMED
    for i in moved(held):
        held[i] = _entry(held[i][0], held[i][1])
    new = _modules(_PRIMED_MODULES, task)
    held += new
    _PRIMED_MODULES.update(where for where, ns, *_ in new if isinstance(ns, dict))
    return held


def _library_own(value: Any, candidate: Callable[[str], bool]) -> bool:
    """Whether ``value``, bound where a library had code, is a library's own code: a
    function of a file not the candidate's run in a loaded module's globals (or such a
    function with data bound by ``functools.partial``), a class, or a C function of a
    module. A library rebinding its own names at run time (a lazy initializer, a
    wrapper) binds those; a stand-in made of C callables (a
    ``functools.partial``, a method of some object) or of the candidate's code is not."""
    if isinstance(value, functools.partial):
        # a library's own function with data bound (Triton's interpreter binds
        # ``partial(_set_attr, name=...)`` over ``tl.multiple_of`` and leaves it there);
        # never a callable bound in, which the function may call (a chain of them)
        bound = [*value.args, *value.keywords.values()]
        inner = [x for b in bound if isinstance(b, list | tuple | set | dict) for x in b]
        if any(callable(x) for x in bound + inner):
            return False
        return isinstance(value.func, types.FunctionType) and _library_own(value.func, candidate)
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    elif isinstance(value, property):
        value = value.fget
    if isinstance(value, types.FunctionType):
        # globals of a loaded module not the candidate's, not the one ``__module__``
        # names (a wrapper made by ``functools.wraps`` carries the wrapped function's)
        home = [m for m in list(sys.modules.values())
                if getattr(m, "__dict__", None) is value.__globals__]  # fmt: skip
        files = [value.__code__.co_filename, *(getattr(m, "__file__", None) or "" for m in home)]
        return bool(home) and not any(candidate(f) for f in files)
    if isinstance(value, type):
        module = sys.modules.get(value.__module__)
        return not candidate(getattr(module, "__file__", None) or "")
    if isinstance(value, types.BuiltinFunctionType):
        return value.__self__ is None or isinstance(value.__self__, types.ModuleType)
    return False


def rebound_since(before: Bindings, candidate: Callable[[str], bool],
                  moved: Moved = _moved) -> list[str]:  # fmt: skip
    """``where.name`` (with what it holds now) for each binding of ``before`` now bound to
    code that is not a library's own (:func:`_library_own`); data rebound (a counter, a
    cache) and names added since are let be."""
    found: list[str] = []
    for i in moved(before):
        where, ns, names, values = before[i]
        space = _space(ns)
        for name, old in zip(names, values, strict=True):
            new = space.get(name)
            if new is old or not (callable(new) or isinstance(new, staticmethod | classmethod
                                                               | property)):  # fmt: skip
                continue
            if not _library_own(new, candidate):
                found.append(f"{where}.{name} (now {type(new).__qualname__})")
    return found
