"""Whether the task's own modules still hold what their files define.

A task can wrap its kernel in code the candidate may not edit: the e2e tasks' model file
calls the kernel from its decode step. The candidate's module is imported into the same
process, and a module attribute can be assigned from anywhere (no audit event fires):
a candidate that replaced the model's ``decode`` with its own at import ran the model's
other layers on library calls of its choosing, and its score measured a model that is not
the task's. This reads each task file again and checks, for every name its top level
binds by ``def``, ``class`` or ``import``, that the loaded module still holds that
object; and, for every name at all, that the calls of the plan left it bound to what it
was once everything had loaded (a plain assignment, ``OPS = ...``, has no definition to
compare with; names the file's own functions rebind through ``global`` are let be). It
runs in the candidate's process, so it is a tripwire: code that tries hard can restore
the names before the check; it explains and catches the plain edit.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

__all__ = ["changed_since", "patched", "snapshot"]


def patched(files: Iterable[str], held: Iterable[ModuleType] = ()) -> list[str]:
    """``file:name`` for each top-level binding of a loaded task module that changed
    (``held``: modules the harness loaded itself, :func:`_task_modules`)."""
    found: list[str] = []
    for module, path in _task_modules(files, held):
        tree = _tree(path)
        if tree is None:
            continue
        name = Path(path).name
        found += [f"{name}:{b}" for b in _changed(module, tree, os.path.realpath(path))]
    return found


@functools.lru_cache(maxsize=64)
def _tree(path: str) -> ast.Module | None:
    """The file's syntax tree, read and parsed once per process (each evaluation checks up
    to three times; the first read is also the one nearest the candidate's import)."""
    try:
        return ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def _changed(module: ModuleType, tree: ast.Module, path: str) -> list[str]:
    out: list[str] = []
    space = vars(module)
    again = _rebound(tree)
    for node in tree.body:
        if _names(node) & again:
            continue  # the file itself binds the name more than once: either may stand
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not _is_def(space.get(node.name, _MISSING), node, path):
                out.append(node.name)
        elif isinstance(node, ast.ClassDef):
            obj = space.get(node.name, _MISSING)
            if not (isinstance(obj, type) and obj.__module__ == module.__name__
                    and obj.__qualname__ == node.name):  # fmt: skip
                out.append(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out += [a for a, want in _imports(node, module) if space.get(a, _MISSING) is not want]
    return out


_MISSING = object()


def _names(node: ast.stmt) -> set[str]:
    """Names a top-level statement binds."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".", 1)[0] for a in node.names}
    out: set[str] = set()  # anything else: whatever it binds anywhere inside (if/try blocks)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            out.add(sub.id)
        elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(sub.name)
        elif isinstance(sub, ast.Import | ast.ImportFrom):
            out |= {(a.asname or a.name).split(".", 1)[0] for a in sub.names}
    return out


def _rebound(tree: ast.Module) -> set[str]:
    """Names the file's top level binds more than once (``f = wrap(f)`` after ``def f``)."""
    seen: set[str] = set()
    twice: set[str] = set()
    for node in tree.body:
        for name in _names(node):
            (twice if name in seen else seen).add(name)
    return twice


@functools.lru_cache(maxsize=64)
def _codes(path: str) -> dict[tuple[str, int], CodeType]:
    """The code objects the file's source compiles to, by name and first line (nested
    ones included), compiled once per process with no flags of this module's."""
    try:
        top = compile(Path(path).read_bytes(), path, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return {}
    out: dict[tuple[str, int], CodeType] = {}
    stack = [top]
    while stack:
        for const in stack.pop().co_consts:
            if isinstance(const, CodeType):
                out[(const.co_name, const.co_firstlineno)] = const
                stack.append(const)
    return out


def _same_code(a: CodeType, b: CodeType) -> bool:
    """Whether two code objects use the same names, locals, arguments and constants
    (nested code compared alike). Not the instructions: a task's loader may compile its
    files another way (statement by statement, with other flags), which changes the
    bytecode of the very same source (``LOAD_METHOD`` for ``LOAD_ATTR``)."""
    fields = ("co_names", "co_varnames", "co_argcount", "co_kwonlyargcount", "co_freevars")
    if any(getattr(a, f) != getattr(b, f) for f in fields):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts, strict=True):
        if isinstance(x, CodeType) and isinstance(y, CodeType):
            if not _same_code(x, y):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def _is_def(obj: Any, node: ast.FunctionDef | ast.AsyncFunctionDef, path: str) -> bool:
    """Whether ``obj`` is the function ``node`` defines (through decorators' wrappers:
    ``__wrapped__``, a Triton kernel's or autotuner's ``fn``; a decorator that hides the
    function is let be), running the code the file compiles to: a function object kept
    while its ``__code__`` was replaced, under the same name and file, is not."""
    for _ in range(4):
        code = getattr(obj, "__code__", None)
        if code is not None:
            if code.co_name != node.name or os.path.realpath(code.co_filename) != path:
                return False
            codes = _codes(path)
            if not codes:  # the file no longer compiles: its name and file must do
                return True
            want = codes.get((code.co_name, code.co_firstlineno))
            return want is not None and _same_code(code, want)
        inner = getattr(obj, "__wrapped__", None) or getattr(obj, "fn", None)
        if inner is None:
            break
        obj = inner
    return bool(node.decorator_list) and obj is not _MISSING


def _imports(node: ast.Import | ast.ImportFrom, module: ModuleType) -> list[tuple[str, Any]]:
    """(bound name, the object the import binds) for each name whose source is loaded."""
    out: list[tuple[str, Any]] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                target = sys.modules.get(alias.name)
                bound = alias.asname
            else:
                bound = alias.name.split(".", 1)[0]
                target = sys.modules.get(bound)
            if target is not None:
                out.append((bound, target))
        return out
    source = _absolute(node, module)
    origin = sys.modules.get(source) if source else None
    if origin is None:
        return out
    for alias in node.names:
        if alias.name == "*":
            continue
        got: Any = getattr(origin, alias.name, _MISSING)
        if got is _MISSING:
            got = sys.modules.get(f"{source}.{alias.name}", _MISSING)
        if got is not _MISSING:
            out.append((alias.asname or alias.name, got))
    return out


def _absolute(node: ast.ImportFrom, module: ModuleType) -> str | None:
    """The module a ``from ... import`` reads, resolved against the importing package."""
    if not node.level:
        return node.module
    package = (getattr(module, "__package__", None) or "").split(".") if module.__package__ else []
    if node.level - 1 > len(package):
        return None
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])]) or None


def _task_modules(
    files: Iterable[str], held: Iterable[ModuleType] = ()
) -> list[tuple[ModuleType, str]]:
    """The loaded modules whose file is one of ``files``: those in ``sys.modules`` (a
    thousand modules or more; only those with a task file's name are resolved on disk),
    and those reached from ``held`` through the module globals of task modules.

    ``held`` are modules the harness loaded and keeps (the baseline's entry, the
    candidate's): ``sys.modules`` is only a dict that code can take a module out of
    while the module's importers still hold and use it (corpus ``s28``), and the
    harness loads the baseline without entering it there at all."""
    wanted = {os.path.realpath(f) for f in files}
    names = {os.path.basename(f) for f in wanted}
    out: dict[int, tuple[ModuleType, str]] = {}

    def take(module: ModuleType) -> None:
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or os.path.basename(path) not in names:
            return
        if os.path.realpath(path) in wanted:
            out[id(module)] = (module, path)

    for module in list(sys.modules.values()):
        take(module)
    stack = [*held, *(m for m, _ in out.values())]
    seen: set[int] = set()
    while stack:  # task modules' imports of task modules, however deep
        module = stack.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        take(module)
        if id(module) in out:
            stack += [v for v in list(vars(module).values()) if isinstance(v, ModuleType)]
    return list(out.values())


Snapshot = dict[str, tuple[ModuleType, dict[str, Any], dict[str, dict[str, Any]]]]
"""Per task module (``file:module``): the module, its bindings, and per binding the
callables that its object and its classes hold (:func:`_callables`)."""


def snapshot(files: Iterable[str], held: Iterable[ModuleType] = ()) -> Snapshot:
    """Every loaded task module's bindings now (the objects, held), minus those its own
    functions rebind (``global`` names) and dunders; and what each bound object calls
    through its attributes."""
    out: Snapshot = {}
    for module, path in _task_modules(files, held):
        tree = _tree(path)
        if tree is None:
            continue
        moving = {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}
        kept = {k: v for k, v in vars(module).items() if not k.startswith("__") and k not in moving}
        methods = {k: _callables(v) for k, v in kept.items()}
        out[f"{Path(path).name}:{module.__name__}"] = (module, kept, methods)
    return out


def _callables(obj: Any) -> dict[str, Any]:
    """The callables reached through an object's attributes: those its own ``__dict__``
    holds, and the methods of its classes (each class in its MRO but the built-in ones),
    keyed ``attr`` and ``Class.attr``.

    A name can keep its object while what the object calls changes: an instance attribute
    named like a method shadows the method (``kernel.run = slower`` on the baseline's own
    Triton kernel, corpus ``s34``), and a method rebound on a class changes every
    instance. Callables only: objects set plain state as they run (an autotuner's best
    config, a kernel's cache), never their methods. The callables in a list or tuple the
    object holds count too, keyed ``attr[i]``: a hook appended to one runs on every call
    (Triton's ``add_pre_run_hook`` on the baseline's kernel, corpus ``s44``), while the
    name, the object and its methods stay as they were."""
    if isinstance(obj, ModuleType) or _plain(obj):
        return {}
    out: dict[str, Any] = {}
    own = getattr(obj, "__dict__", None)
    if isinstance(own, dict):
        out.update({k: v for k, v in own.items() if callable(v)})
        for k, v in own.items():
            if isinstance(v, list | tuple):
                out.update({f"{k}[{i}]": item for i, item in enumerate(v) if callable(item)})
    cls = obj if isinstance(obj, type) else type(obj)
    for c in getattr(cls, "__mro__", ()):
        if c.__module__ == "builtins":
            continue  # their attributes cannot be assigned
        for k, v in vars(c).items():
            if callable(v) or isinstance(v, staticmethod | classmethod | property):
                out.setdefault(f"{c.__qualname__}.{k}", v)
    return out


def changed_since(before: Snapshot, *, data: bool = True) -> list[str]:
    """``file:name`` for each binding of ``before`` that is gone or bound to another object,
    and ``file:name.attr`` for each callable that the same object now reaches otherwise
    (added, removed or rebound on it or on its classes, :func:`_callables`).

    ``data=False`` lets a value be replaced by another plain value (numbers, strings,
    tuples of them): a task's own code may set its module's sizes for each shape it runs
    (imported KernelBench models get theirs from the problem file that way), and a size
    set wrong changes the answer the checker compares, not the code that computes it."""
    found: list[str] = []
    for where, (module, kept, methods) in before.items():
        space = vars(module)
        name = where.split(":", 1)[0]
        for k, v in kept.items():
            now = space.get(k, _MISSING)
            if now is not v and (data or not (_plain(v) and _plain(now))):
                found.append(f"{name}:{k}")
            elif now is v:  # the same object: what it calls must be the same too
                was, has = methods.get(k, {}), _callables(v)
                found += [f"{name}:{k}.{a}" for a in sorted(set(was) | set(has))
                          if was.get(a, _MISSING) is not has.get(a, _MISSING)
                          and not _cached(v, a, has.get(a, _MISSING))
                          and not (a not in was and _library_own(a, has[a]))]  # fmt: skip
    return found


def _library_own(attr: str, value: Any) -> bool:
    """Whether ``value`` is a function or class that an installed library's module defines
    at its top level under the name ``attr``.

    Libraries bind such names onto their objects as they first run: a Triton kernel, at its
    first launch on a GPU, keeps the compiler's ``compile``, ``ASTSource`` and
    ``CompiledKernel`` on itself under those names (``JITFunction.create_binder``), so the
    baseline's own kernel gains three callables once the plan's calls have run. Only a
    callable *added* is let be so, and only that exact object under its own name: one that
    replaces what the object held, one under another name, a function of the candidate's
    or of a task file, or a wrapper made at run time (``functools.partial``, a lambda, a
    closure) is still named."""
    module = sys.modules.get(getattr(value, "__module__", None) or "")
    if module is None or getattr(value, "__name__", None) != attr:
        return False
    if getattr(value, "__qualname__", attr) != attr or getattr(module, attr, None) is not value:
        return False
    return _installed(os.path.realpath(getattr(module, "__file__", None) or ""))


def _installed(path: str) -> bool:
    """Whether ``path`` lies among installed packages or the standard library."""
    import sysconfig

    if f"{os.sep}site-packages{os.sep}" in path or f"{os.sep}dist-packages{os.sep}" in path:
        return True
    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return any(path.startswith(os.path.realpath(r) + os.sep) for r in roots if r)


def _cached(obj: Any, attr: str, value: Any) -> bool:
    """Whether ``value`` is what a ``functools.cached_property`` of the object's class
    computes for ``attr`` (stored on the instance at first use: a Triton autotuner's
    ``do_bench``, the benchmarker it asks the driver for). Computed again to compare, so a
    value set in its place is still named."""
    prop = getattr(type(obj), attr, None) if "." not in attr else None
    if not isinstance(prop, functools.cached_property) or value is _MISSING:
        return False
    try:
        fresh = prop.func(obj)
    except Exception:
        return False
    if fresh is value:
        return True
    # A bound method is made anew on each access: the same function of the same object.
    func, owner = getattr(fresh, "__func__", _MISSING), getattr(fresh, "__self__", _MISSING)
    return func is getattr(value, "__func__", None) and owner is getattr(value, "__self__", None)


def _plain(value: Any) -> bool:
    """Whether ``value`` is plain data: a number, string, ``None``, or a tuple of them."""
    if value is None or isinstance(value, int | float | complex | str | bytes):
        return True
    return isinstance(value, tuple) and all(_plain(v) for v in value)
