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
# Calls of the language that host code makes too: types, and a compile-time constant.
_HOST_SAFE = frozenset({"constexpr", "dtype", "pointer_type", "block_type", "tuple_type"})
FLAG = "interpreter_access"


def _names(node: ast.AST, aliases: dict[str, str]) -> Iterator[str]:
    """What every name and attribute chain in ``node`` resolves to."""
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute | ast.Name):
            dotted = dotted_name(n)
            if dotted is not None:
                yield resolve(dotted, aliases)


def _own(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of ``fn``'s body, not of functions or classes defined in it (judged on
    their own: a host function may define a kernel)."""
    nested = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    todo: list[ast.AST] = [n for n in fn.body if not isinstance(n, nested)]
    while todo:
        n = todo.pop()
        yield n
        todo += [c for c in ast.iter_child_nodes(n) if not isinstance(c, nested)]


def _device_call(node: ast.AST, aliases: dict[str, str], kernels: set[str]) -> bool:
    """Whether ``node`` is a call that only kernel code makes: of a function of Triton's
    language (host code names the language's types, ``tl.float16``, and may annotate a
    parameter ``tl.constexpr``, but calls none of its functions), or of a kernel by its
    name (host code launches a kernel through ``kernel[grid]``)."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name) and node.func.id in kernels:
        return True
    dotted = dotted_name(node.func)
    full = resolve(dotted, aliases) if dotted else ""
    return full.startswith("triton.language.") and full.rsplit(".", 1)[1] not in _HOST_SAFE


def _callee(func: ast.expr, aliases: dict[str, str]) -> str:
    """The name a kernel body calls a function by: a plain name, or the last part of an
    attribute chain (``helpers.f``, ``Ops.f``, ``obj.f``: a function of that name defined
    in the file, a static method included, is taken for a kernel), but not the language's
    own (``tl.load``)."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        dotted = dotted_name(func)
        if dotted is None or not resolve(dotted, aliases).startswith("triton.language."):
            return func.attr
    return ""


def module_aliases(tree: ast.Module, aliases: dict[str, str]) -> dict[str, str]:
    """``aliases`` and the module's plain assignments of a name to another (``J =
    triton.jit``, ``L = tl``), so that a kernel made through one is still seen."""
    out = dict(aliases)
    for _ in range(4):  # chains of such names, a few deep
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Attribute | ast.Name):
                dotted = dotted_name(stmt.value)
                for t in stmt.targets:
                    if dotted is not None and isinstance(t, ast.Name):
                        out[t.id] = resolve(dotted, out)
    return out


def kernel_bodies(
    tree: ast.AST, aliases: dict[str, str]
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function in ``tree`` that Triton may compile, however ``jit`` is spelled or
    applied: one whose decorators name ``jit`` anywhere in them, one named anywhere in a
    call that names it (``triton.jit(fn=body)``), any that calls a function of Triton's
    language or another such function by name, which host code never does, and any that
    such a function calls, by name or through an attribute (a kernel calls nothing but
    kernels)."""
    handed = {
        a.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and any(f in _JIT for f in _names(n.func, aliases))
        for a in ast.walk(n)
        if isinstance(a, ast.Name)
    }
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    found = [
        n
        for n in functions
        if n.name in handed or any(f in _JIT for d in n.decorator_list for f in _names(d, aliases))
    ]
    while True:  # helpers calling helpers, kernels calling helpers: until none joins
        kernels = {n.name for n in found}
        called = {
            name
            for n in found
            for x in _own(n)
            if isinstance(x, ast.Call) and (name := _callee(x.func, aliases))
        }
        more = [
            n
            for n in functions
            if n not in found
            and (n.name in called or any(_device_call(x, aliases, kernels) for x in _own(n)))
        ]
        if not more:
            return found
        found += more


def findings(tree: ast.Module, aliases: dict[str, str]) -> Iterator[tuple[ast.AST, str]]:
    """``(node, detail)`` for each use in a kernel body of what only the interpreter has."""
    aliases = module_aliases(tree, aliases)
    for fn in kernel_bodies(tree, aliases):
        for body in fn.body:  # not the decorators: ``@triton.jit`` itself names triton
            for n in ast.walk(body):  # nested functions too: a kernel's are its own
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
