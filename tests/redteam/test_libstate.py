"""Every library module's bindings, held before the candidate and compared after the plan.

Library code the harness runs looks up globals no task code names (``make_inputs``'s
``with torch.device(...)`` calls ``torch.utils._device._device_constructors()`` on every
operator of the draw). A stand-in bound there is ``library_patched``; a library rebinding
its own names at run time (Triton's interpreter leaves ``partial(_set_attr, ...)`` over
``tl.multiple_of``) is not.
"""

from __future__ import annotations

import functools
import operator
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from redteam_corpus import Entry, evaluate_entry

from aka.eval import _libstate
from aka.eval._libstate import bind_library, rebound_since

REPO = Path(__file__).resolve().parents[2]


def never(filename: str) -> bool:
    return False


@pytest.fixture(autouse=True)
def unprimed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process of its own each: nothing held from an earlier test."""
    monkeypatch.setattr(_libstate, "_PRIMED", [])
    monkeypatch.setattr(_libstate, "_PRIMED_MODULES", set())


@pytest.fixture()
def module() -> Iterator[types.ModuleType]:
    """A library module with a function, a class and a method, loaded before the hold."""
    mod = types.ModuleType("aka_test_library")
    code = (
        "def constructors():\n    return set()\n\n\n"
        "def helper(x, name=None):\n    return x\n\n\n"
        "class Mode:\n    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
        "        return func(*args, **(kwargs or {}))\n"
    )
    exec(compile(code, "/usr/lib/python3/aka_test_library.py", "exec"), mod.__dict__)
    sys.modules[mod.__name__] = mod
    try:
        yield mod
    finally:
        del sys.modules[mod.__name__]


def test_a_chain_of_c_callables_bound_over_a_library_global_is_named(
    module: types.ModuleType,
) -> None:
    held = bind_library()
    module.constructors = functools.partial(map, operator.itemgetter(0), [[1]])  # type: ignore[attr-defined]
    found = rebound_since(held, never)
    assert found == ["aka_test_library.constructors (now partial)"]


def test_a_class_s_method_replaced_by_a_c_callable_is_named(module: types.ModuleType) -> None:
    held = bind_library()
    module.Mode.__torch_function__ = functools.partial(operator.call)  # type: ignore[attr-defined]
    assert rebound_since(held, never) == ["aka_test_library.Mode.__torch_function__ (now partial)"]


def test_the_candidate_s_own_function_bound_there_is_named(module: types.ModuleType) -> None:
    held = bind_library()
    scope: dict[str, object] = {"__name__": "aka_test_library"}
    exec(compile("def stand_in():\n    return set()\n", "/cand/kernel.py", "exec"), scope)
    module.constructors = scope["stand_in"]  # type: ignore[attr-defined]
    assert rebound_since(held, lambda f: f.startswith("/cand/")) == [
        "aka_test_library.constructors (now function)"
    ]


def test_a_library_rebinding_its_own_names_is_let_be(module: types.ModuleType) -> None:
    held = bind_library()
    # its own function under another name, with data bound (Triton's interpreter)
    module.constructors = functools.partial(module.helper, name="tt.divisibility")  # type: ignore[attr-defined]
    module.counter = 3  # type: ignore[attr-defined]  # data, and a name added since
    module.Mode.cache = {}  # type: ignore[attr-defined]
    assert rebound_since(held, never) == []


def test_a_library_function_with_a_callable_bound_in_is_named(module: types.ModuleType) -> None:
    """``partial(tree_map, chain)``: the library function would call what is bound in."""
    held = bind_library()
    chain = functools.partial(map, operator.itemgetter(0))
    module.constructors = functools.partial(module.helper, [chain])  # type: ignore[attr-defined]
    assert rebound_since(held, never) == ["aka_test_library.constructors (now partial)"]


def test_a_child_of_a_primed_parent_holds_what_moved_since_as_it_is_now(
    module: types.ModuleType,
) -> None:
    _libstate.prime()
    module.constructors = module.helper  # type: ignore[attr-defined]  # before the candidate
    held = bind_library()
    assert rebound_since(held, never) == []
    module.constructors = functools.partial(operator.call)  # type: ignore[attr-defined]
    assert rebound_since(held, never) == ["aka_test_library.constructors (now partial)"]


def test_the_core_finds_what_moved_as_python_does(module: types.ModuleType) -> None:
    """The sealed core's look-ups (borrowed references, in C++) agree with Python's."""
    from aka.eval import _native

    core = _native.load(str(_native.ensure_built("cpu")))
    held = bind_library(core.moved_bindings)
    assert core.moved_bindings(held) == _libstate._moved(held) == []
    module.constructors = functools.partial(operator.call)  # type: ignore[attr-defined]
    module.Mode.__torch_function__ = {}.get  # type: ignore[attr-defined]  # a method of a dict
    del module.helper  # type: ignore[attr-defined]
    moved = core.moved_bindings(held)
    assert moved == _libstate._moved(held)
    assert {held[i][0] for i in moved} == {"aka_test_library", "aka_test_library.Mode"}
    assert rebound_since(held, never, core.moved_bindings) == [
        "aka_test_library.constructors (now partial)",
        "aka_test_library.Mode.__torch_function__ (now builtin_function_or_method)",
    ]


def test_a_library_wrapper_carrying_the_wrapped_function_s_module_name_is_let_be(
    module: types.ModuleType,
) -> None:
    """``functools.wraps`` copies ``__module__``: the wrapper runs in its own module's
    globals (``torch._dynamo`` wraps library functions so at run time)."""
    held = bind_library()

    @functools.wraps(module.constructors)  # type: ignore[attr-defined]
    def wrapper() -> set[object]:
        return set()

    assert wrapper.__module__ == "aka_test_library"
    module.constructors = wrapper  # type: ignore[attr-defined]
    assert rebound_since(held, never) == []


def test_a_library_code_object_run_in_the_candidate_s_globals_is_named(
    module: types.ModuleType,
) -> None:
    """A library's code object given the candidate module's globals (corpus ``s54``)."""
    cand = types.ModuleType("aka_candidate_test")
    cand.__file__ = "/cand/kernel.py"
    sys.modules[cand.__name__] = cand
    try:
        held = bind_library()
        module.constructors = types.FunctionType(module.helper.__code__, cand.__dict__)  # type: ignore[attr-defined]
        assert rebound_since(held, lambda f: f.startswith("/cand/")) == [
            "aka_test_library.constructors (now function)"
        ]
    finally:
        del sys.modules[cand.__name__]


def test_task_modules_are_left_to_the_task_code_snapshot(module: types.ModuleType) -> None:
    """A task's module may bind a kernel object lazily (its own tripwire judges it)."""
    module.__file__ = "/task/reference.py"
    held = bind_library(task=lambda f: f.startswith("/task/"))
    module.constructors = functools.partial(operator.call)  # type: ignore[attr-defined]
    assert rebound_since(held, never) == []


# A stand-in of C callables bound over a library global after each of the candidate's
# calls of the first timed shape, and the library's own put back in the last shape's, so
# that the plan's end finds nothing moved. The core looks between two timed shapes too.
PUT_BACK = """
import functools as _ft

import torch.utils._device as _dev

_own = _dev._device_constructors
_kept = [_own()]
_softmax = softmax


def softmax(x):
    out = _softmax(x)
    if x.shape[-1] == 96:  # the first timed shape
        _dev._device_constructors = _ft.partial(_kept.__getitem__, 0)
    else:
        _dev._device_constructors = _own
    return out
"""


def test_a_stand_in_put_back_before_the_plan_ends_is_named(tmp_path: Path) -> None:
    kernel = REPO / "tasks/triton2triton/llm/softmax/source/kernel.py"
    entry = Entry("put_back", "triton2triton/llm/softmax", 4, time=True, bundled=True)
    s = evaluate_entry(entry, tmp_path, source=kernel.read_text() + PUT_BACK)
    assert not s.correct and "library_patched" in s.hack_flags, (s.hack_flags, s.error)
    (seen,) = [e for e in s.evidence if e.startswith("library_patched")]
    assert "between timed shapes" in seen and "_device_constructors" in seen, seen


def test_the_look_between_shapes_never_raises_into_the_core(tmp_path: Path) -> None:
    """A comparison that raises (a namespace the candidate broke) is a finding of its own,
    not an exception in the sealed core's timing loop."""
    from aka.eval._candidate import _between

    def broken(entries: list[object]) -> list[int]:
        raise RuntimeError("a dict that refuses lookups")

    seen: list[str] = []
    _between(bind_library(), tmp_path, broken, seen)(0)
    assert len(seen) == 1 and "pair 0 raised" in seen[0] and "refuses lookups" in seen[0], seen
