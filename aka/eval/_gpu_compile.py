"""On the CPU, whether the Triton kernels a candidate launched compile for a GPU.

Triton's interpreter (``TRITON_INTERPRET=1``, how aka runs Triton tasks on the CPU) runs a
kernel's body as Python over numpy arrays: whatever Python the body holds runs too. A
"kernel" that reads its block's numpy data and computes with numpy (or prints, branches
on host values, calls any function) is right and fast under the interpreter and is no
kernel at all: Triton's compiler refuses it. So the CPU would reward what a GPU cannot
run, and every such score would say nothing of the GPU it stands for.

This compiles, after the plan, each kernel the candidate launched, with the argument
types and constants of its launches, for one GPU target (Triton compiles without a GPU:
front end, LLVM and ``ptxas`` all run on the host). It compiles the very functions that
ran (their code objects, their module's globals), not a fresh import of the file, so a
module that tells the check from the evaluation has nothing to switch on; helper
``@triton.jit`` functions the kernel calls are compiled the same way. A compiler that
cannot compile aka's own probe kernel here (another Triton, no backend) makes the check a
note, never a failure. It runs in the candidate's process: a tripwire, for kernels that
only the interpreter runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

tl: Any = None  # triton.language once :func:`_compiler` runs (the probe kernel reads it)

__all__ = ["TARGET", "Launches", "check", "track_interpreter"]

TARGET = ("cuda", 90, 32)
"""The GPU the kernels are compiled for (backend, compute capability, warp size)."""
_MAX = 32  # kernel signatures compiled per evaluation (an autotuner launches several)
_DTYPES = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}  # fmt: skip
_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


class Launches:
    """The distinct (kernel, argument types, constants) of the launches seen: what
    :func:`check` compiles. Holds no tensor, only dtypes and plain values."""

    def __init__(self) -> None:
        self.seen: dict[tuple[Any, ...], tuple[Any, list[Any], dict[str, Any]]] = {}
        self.more = 0  # distinct launches past :data:`_MAX`: never compiled, so a failure
        # What each kernel ran as when it first launched: its function and that function's
        # code. The interpreter keeps the body it rewrote from them, so a function or code
        # put in their place later would change what the check compiles, not what ran.
        self.ran: dict[int, tuple[Any, types.FunctionType | None, types.CodeType | None]] = {}

    def add(self, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if id(kernel) not in self.ran:
            fn = _python_function(kernel)
            self.ran[id(kernel)] = (kernel, fn, fn.__code__ if fn is not None else None)
        values = [_shape_of(v) for v in args]
        named = {k: _shape_of(v) for k, v in kwargs.items() if k not in ("grid", "warmup")}
        key = (id(kernel), repr(values), repr(sorted(named.items())))
        if key in self.seen:
            return
        if len(self.seen) >= _MAX:
            self.more += 1  # a body may branch on a constant only the last launches give
            return
        self.seen[key] = (kernel, values, named)


def _shape_of(value: Any) -> Any:
    """A launch argument as the compiler needs it: a tensor's dtype, or the plain value."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "data_ptr"):
        return ("tensor", str(dtype).removeprefix("torch."))
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return ("tuple" if isinstance(value, tuple) else "other", type(value).__name__)


# What the interpreter replaced in triton.language, first value first: (object, name) ->
# the value before any patch (``_MISSING_ATTR`` where there was none).
_ORIGINALS: dict[tuple[int, str], tuple[Any, str, Any]] = {}
_MISSING_ATTR = object()


def track_interpreter() -> None:
    """Keep what Triton's interpreter replaces in ``triton.language`` as it runs kernels.

    The interpreter swaps the language's builtins for its own while a kernel runs, and a
    helper kernel called from a kernel's body swaps them with no restore: the compiler
    then reads the interpreter's builtins. :func:`check` puts the originals back while it
    compiles. Called before any kernel runs; a Triton without this hook point is left
    alone (the probe kernel then tells whether compiling still works)."""
    try:
        from triton.runtime.interpreter import _LangPatchScope
    except ImportError:
        return
    original = _LangPatchScope.set_attr
    if getattr(original, "__aka_tracked__", False):
        return

    def set_attr(scope: Any, obj: Any, name: str, value: Any) -> None:
        _ORIGINALS.setdefault((id(obj), name), (obj, name, getattr(obj, name, _MISSING_ATTR)))
        original(scope, obj, name, value)

    set_attr.__aka_tracked__ = True  # type: ignore[attr-defined]
    _LangPatchScope.set_attr = set_attr


@contextlib.contextmanager
def _pristine(spaces: list[dict[str, Any]]) -> Iterator[None]:
    """``triton.language`` as the compiler reads it, for the block: the interpreter's
    replacements undone, and every ``@jit`` function the interpreter built as an
    interpreted one a JIT function, in every loaded module and in ``spaces`` (the
    launched kernels' globals, whether or not their module is still in ``sys.modules``):
    Triton's own (``tl.max``, ``tl.sum``) and the candidate's helpers, however a kernel
    reaches them (a global, a module's attribute)."""
    now = [(obj, name, getattr(obj, name, _MISSING_ATTR)) for obj, name, _ in _ORIGINALS.values()]
    swapped = _as_jit(spaces)
    _put(list(_ORIGINALS.values()))
    for space, name, _, new in swapped:
        space[name] = new
    try:
        yield
    finally:
        _put(now)
        for space, name, old, _ in swapped:
            space[name] = old


def _as_jit(spaces: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, Any, Any]]:
    """``(namespace, name, interpreted, jit)`` for every interpreted function bound at the
    top of a loaded module or in ``spaces``."""
    from triton.runtime.jit import JITFunction

    # A module's own dict, past any ``__getattribute__`` of its class (a lazy module would
    # import itself on any attribute read).
    found = [object.__getattribute__(m, "__dict__") for m in list(sys.modules.values())
             if isinstance(m, types.ModuleType)]  # fmt: skip
    out = []
    for space in {id(d): d for d in [*found, *spaces]}.values():
        for attr, value in list(space.items()):
            try:  # one that cannot be built (no source) only fails a kernel that calls it
                fn = _python_function(value) if _interpreted(value) else None
                if fn is not None:
                    out.append((space, attr, value, JITFunction(fn)))
            except Exception:
                continue
    return out


def _interpreted(value: Any) -> bool:
    """Whether ``value`` is a kernel as the interpreter built it (by class, not by the
    class's name, which any object can carry)."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return False
    return isinstance(value, InterpretedFunction)


def _put(values: list[tuple[Any, str, Any]]) -> None:
    for obj, name, value in values:
        if value is _MISSING_ATTR:
            if hasattr(obj, name):
                delattr(obj, name)
        else:
            setattr(obj, name, value)


def check(launches: Launches, within: str | None = None) -> tuple[list[str], list[str]]:
    """``(failures, notes)``: a line for each launched kernel (defined in a file under
    ``within``, the candidate's folder: the baseline's kernels are the task's) that does
    not compile for :data:`TARGET`, and why nothing was checked when the compiler is not
    usable here. Never raises: what it cannot do is a note."""
    inside = os.path.realpath(within).rstrip("/") + "/" if within else ""
    failures = [f"{launches.more} more distinct kernel launches than the {_MAX} the check "
                "compiles: launch fewer kernel variants"] if launches.more else []  # fmt: skip
    try:
        spaces = [fn.__globals__ for _, fn, _ in launches.ran.values() if fn is not None]
        with _pristine(spaces):
            try:
                compiler = _compiler()
            except Exception as exc:  # another Triton, no NVIDIA backend, no ptxas
                note = f"GPU compile check unavailable: {type(exc).__name__}: {str(exc)[:200]}"
                return [], [note]
            found, notes = _check(launches, inside, compiler)
        return failures + found, notes
    except Exception as exc:
        # The compiler works (or was never reached): what stopped the check is the
        # candidate's doing (an object that raises when the check reads it), and nothing
        # it launched was shown to compile.
        message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        return [*failures, f"the kernels launched could not be checked: {message}"], []


def _check(
    launches: Launches, inside: str, compiler: tuple[Callable[..., Any], type]
) -> tuple[list[str], list[str]]:
    compile_one, jit = compiler
    failures: list[str] = []
    notes: list[str] = []
    for kernel, values, named in launches.seen.values():
        _, first, code = launches.ran[id(kernel)]
        if first is None or code is None:
            failures.append(f"a kernel launched with no Python function ({type(kernel).__name__})")
            continue
        if not os.path.realpath(code.co_filename).startswith(inside):
            continue
        if _python_function(kernel) is not first or first.__code__ is not code:
            failures.append(f"{first.__name__}'s function or code was replaced after it ran")
            continue
        try:
            kernel_jit = jit(first)  # over its module's globals, their kernels JIT ones now
            signature, constants, options = _signature(kernel_jit, values, dict(named))
        except HostArgument as exc:
            failures.append(f"{first.__name__} does not compile for a GPU: {exc}")
            continue
        except Exception as exc:  # a launch this check cannot describe: not the kernel's fault
            notes.append(f"GPU compile check skipped {first.__name__}: {str(exc)[:200]}")
            continue
        try:
            compile_one(kernel_jit, signature, constants, options)
        except Exception as exc:
            message = " ".join(str(exc).split())[:300]
            failures.append(
                f"{first.__name__} does not compile for a GPU (sm_{TARGET[1]}): {message}"
            )
    return list(dict.fromkeys(failures)), list(dict.fromkeys(notes))


def _compiler() -> tuple[Callable[..., Any], type]:
    """Triton's compile for :data:`TARGET`, checked on aka's own probe kernel first."""
    global tl
    import triton
    import triton.language
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    tl = triton.language

    target = GPUTarget(*TARGET)

    def compile_one(
        kernel: Any, signature: dict[str, str], constants: dict[str, Any], options: dict[str, Any]
    ) -> None:
        src = ASTSource(fn=kernel, signature=signature, constexprs=constants)
        triton.compile(src, target=target, options=options)

    probe = JITFunction(_probe)
    compile_one(probe, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 32}, {})
    return compile_one, JITFunction


def _probe(x_ptr, n, BLOCK: tl.constexpr):  # Triton reads the annotations: none but constexpr
    """A kernel any Triton that compiles for :data:`TARGET` compiles (never run)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def _python_function(kernel: Any) -> types.FunctionType | None:
    """The Python function behind an interpreted kernel (through autotuners and
    heuristics, which keep theirs as ``fn``)."""
    for _ in range(4):
        try:
            fn = getattr(kernel, "fn", None)
        except Exception:  # a property of the candidate's that raises: no kernel of Triton's
            return None
        if isinstance(fn, types.FunctionType):
            return fn
        if fn is None:
            return None
        kernel = fn
    return None


class HostArgument(TypeError):
    """A launch argument only the interpreter can use: a Python object of the host (a
    function the body calls on its blocks' numpy data, say), where Triton takes tensors,
    numbers, strings, tuples of those and constants."""


def _signature(
    kernel: Any, values: list[Any], named: dict[str, Any]
) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    """Triton's signature, constants and options for one launch of ``kernel``."""
    params = list(kernel.params)
    given = dict(zip([p.name for p in params], values, strict=False))
    options = {k: named.pop(k) for k in _OPTIONS if k in named}
    given.update(named)
    signature: dict[str, str] = {}
    constants: dict[str, Any] = {}
    declared = kernel.signature.parameters
    for p in params:
        if p.name not in given:
            default = declared[p.name].default
            if default is declared[p.name].empty:
                raise TypeError(f"no value for {p.name}")
            given[p.name] = default
        value = given[p.name]
        if p.is_constexpr or value is None:
            signature[p.name] = "constexpr"
            constants[p.name] = value
        elif isinstance(value, tuple) and value[0] == "tensor":
            signature[p.name] = "*" + _DTYPES.get(str(value[1]), str(value[1]))
        elif isinstance(value, bool):
            signature[p.name] = "i1"
        elif isinstance(value, int):
            signature[p.name] = "i32" if -(2**31) <= value < 2**31 else "i64"
        elif isinstance(value, float):
            signature[p.name] = "fp32"
        elif isinstance(value, tuple) and value[0] == "other":
            # a function of the host's, any object the interpreter hands the body as is
            raise HostArgument(f"argument {p.name} is a {value[1]}, which no GPU kernel takes")
        else:
            raise TypeError(f"argument {p.name} is a {value!r}, which this check cannot describe")
    return signature, constants, options
