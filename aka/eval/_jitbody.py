"""Static checks on Triton kernel bodies: what only the interpreter has to offer.

On the CPU a ``@triton.jit`` body runs as Python under Triton's interpreter, where a block
is a tensor whose ``handle`` holds a numpy array; compiled for a GPU, the same body is
traced into IR and the handle is an IR value. A body can branch on that difference (its
handle's class, any private or dunder attribute of the objects it is given, a module of
the interpreter or numpy) with a condition the compiler folds to a constant: it then
compiles only the other branch, so :mod:`aka.eval._gpu_compile` passes a kernel whose
CPU branch computed the answer on the host with numpy (a softmax at 6x where one honest
program per row gets about 2x, correct and unflagged), while on a GPU it would store
zeros. The compiler's dependency scan already refuses global functions in a body, taken
branch or not, so what is left is reaching into objects: these names.

A kernel body needs none of them: Triton's language is ``tl``'s functions, the
arguments' public attributes (``dtype``, ``shape``, ``type``) and constexpr values. So any
of them in a body (a function decorated with ``triton.jit``, or handed to it) is
``interpreter_access``. Checked in the evaluator's process on the candidate's text, where
candidate code never runs; a spelling this scan does not see (a body compiled from a
string) is ``dynamic_code`` on its own.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from aka.pyast import dotted_name, resolve

# What a decorator or a call resolves to when it makes a Triton kernel.
_JIT = frozenset({"triton.jit", "triton.language.jit", "triton.runtime.jit.jit"})
# Modules a body may not name: the interpreter's, the compiler's, host array libraries.
_HOST_ROOTS = ("triton.runtime", "triton.compiler", "triton.backends", "numpy", "torch")
# Attributes that lead from a block to the interpreter's host data.
_HOST_ATTRS = frozenset({"handle", "data"})
# Builtins that look objects up by name, and those that look into them.
_ATTR_CALLS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
_REFLECTION = frozenset({"type", "vars", "dir", "id", "super", "object", "globals", "locals"})
FLAG = "interpreter_access"


def _is_jit(node: ast.AST, aliases: dict[str, str]) -> bool:
    """Whether ``node`` (a decorator, or a call's function) names Triton's ``jit``."""
    if isinstance(node, ast.Call):  # ``@triton.jit(do_not_specialize=...)``
        node = node.func
    dotted = dotted_name(node)
    return dotted is not None and resolve(dotted, aliases) in _JIT


def kernel_bodies(
    tree: ast.AST, aliases: dict[str, str]
) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function in ``tree`` that Triton compiles: decorated with ``jit``, or a
    function of the module handed to ``jit(...)`` by name."""
    handed = {
        a.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and _is_jit(n.func, aliases)
        for a in n.args
        if isinstance(a, ast.Name)
    }
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and (
            n.name in handed or any(_is_jit(d, aliases) for d in n.decorator_list)
        ):
            yield n


def findings(tree: ast.AST, aliases: dict[str, str]) -> Iterator[tuple[ast.AST, str]]:
    """``(node, detail)`` for each use in a kernel body of what only the interpreter has."""
    for fn in kernel_bodies(tree, aliases):
        for body in fn.body:  # not the decorators: ``@triton.jit`` itself names triton
            for n in ast.walk(body):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                    why = _reflection(n.func.id, n.args)
                    if why:
                        yield n, f"{why} in kernel {fn.name}"
                elif isinstance(n, ast.Attribute):
                    if _hidden(n.attr):
                        yield n, f"reads .{n.attr} in kernel {fn.name}: only the interpreter has it"
                        continue
                    dotted = dotted_name(n)
                    full = resolve(dotted, aliases) if dotted else ""
                    if _host(full):
                        yield n, f"names {full} in kernel {fn.name}: a host module"
                elif isinstance(n, ast.Name) and _host(resolve(n.id, aliases)):
                    yield n, f"names {resolve(n.id, aliases)} in kernel {fn.name}: a host module"


def _hidden(attr: str) -> bool:
    """Whether ``attr`` is no public attribute of what a kernel is given."""
    return attr in _HOST_ATTRS or attr.startswith("_")


def _reflection(func: str, args: list[ast.expr]) -> str:
    """Why a call of builtin ``func`` reaches past Triton's language, or ``""``.

    ``getattr`` is one of the builtins Triton compiles (with a constant name); the rest
    only ever run under the interpreter."""
    if func in _ATTR_CALLS:
        name = args[1] if len(args) > 1 else None
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return f"{func}() with a computed name"
        return (
            f"{func}() of .{name.value}: only the interpreter has it" if _hidden(name.value) else ""
        )
    return f"calls {func}(): not Triton" if func in _REFLECTION else ""


def _host(full: str) -> bool:
    return any(full == r or full.startswith(r + ".") for r in _HOST_ROOTS)
