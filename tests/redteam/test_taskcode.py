"""The task-code tripwire (aka.eval._taskcode) on modules loaded from files.

A task module's top-level ``def``, ``class`` and ``import`` names must still hold what
its file binds; what the file itself rebinds (``f = wrap(f)``), decorators' wrappers and
names bound inside ``try``/``if`` blocks are left alone, so an unchanged model file never
fires it.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from aka.eval._taskcode import changed_since, patched, snapshot

MODEL = '''
"""A model file as tasks write them."""
import functools
import math as m
from dataclasses import dataclass, replace

import torch

try:
    import numpy
except ImportError:
    numpy = None


@dataclass
class Ops:
    norm: object


def norm(x):
    return x / m.sqrt(2)


@functools.lru_cache(maxsize=None)
def table(n):
    return n * 2


def step(x):
    return norm(x)


step = functools.partial(step)
'''


@pytest.fixture
def model(tmp_path: Path) -> Iterator[tuple[ModuleType, Path]]:
    path = tmp_path / "llama.py"
    path.write_text(MODEL)
    spec = importlib.util.spec_from_file_location("_taskcode_model", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    try:
        yield module, path
    finally:
        del sys.modules[spec.name]


def test_an_unchanged_model_file_is_left_alone(model: tuple[ModuleType, Path]) -> None:
    _, path = model
    assert patched([str(path)]) == []
    assert patched([]) == []  # not a task file: not looked at


def test_replaced_functions_classes_and_imports_are_named(
    model: tuple[ModuleType, Path],
) -> None:
    module, path = model
    module.norm = lambda x: x  # type: ignore[attr-defined]
    module.Ops = type("Ops", (), {})  # type: ignore[attr-defined]
    module.m = __import__("cmath")  # type: ignore[attr-defined]
    module.replace = functools.partial(print)  # type: ignore[attr-defined]
    module.table = functools.lru_cache(lambda n: n)  # type: ignore[attr-defined]
    assert patched([str(path)]) == [
        "llama.py:m", "llama.py:replace", "llama.py:Ops", "llama.py:norm", "llama.py:table"
    ]  # fmt: skip


def test_a_function_renamed_into_place_is_not_the_file_s(
    model: tuple[ModuleType, Path],
) -> None:
    """Another function under the same name, even one compiled with the file's name."""
    module, path = model

    def norm(x: object) -> object:
        return x

    norm.__code__ = norm.__code__.replace(co_filename="elsewhere.py")
    module.norm = norm  # type: ignore[attr-defined]
    assert patched([str(path)]) == ["llama.py:norm"]
    norm.__code__ = norm.__code__.replace(co_filename=str(path), co_name="norm")
    assert patched([str(path)]) == ["llama.py:norm"]  # not the code the file compiles to


def test_a_function_whose_code_was_replaced_in_place_is_not_the_file_s(
    model: tuple[ModuleType, Path],
) -> None:
    """The function object the file bound, its ``__code__`` swapped under its own name,
    file and first line: the binding keeps its identity, the instructions do not."""
    module, path = model
    original = module.norm.__code__

    def other(x: object) -> object:
        return x

    module.norm.__code__ = other.__code__.replace(
        co_name=original.co_name, co_filename=original.co_filename,
        co_firstlineno=original.co_firstlineno,
    )  # fmt: skip
    assert patched([str(path)]) == ["llama.py:norm"]
    module.norm.__code__ = original
    assert patched([str(path)]) == []


def test_names_the_file_rebinds_or_binds_conditionally_are_skipped(
    model: tuple[ModuleType, Path],
) -> None:
    module, path = model
    module.step = print  # type: ignore[attr-defined]
    module.numpy = None  # type: ignore[attr-defined]
    assert patched([str(path)]) == []


def test_a_task_module_taken_out_of_sys_modules_is_found_through_its_importer(
    model: tuple[ModuleType, Path], tmp_path: Path
) -> None:
    """``sys.modules`` is a dict: a module taken out of it keeps working for the modules
    that imported it, and the harness's own module (held) leads to it (corpus ``s28``)."""
    module, path = model
    importer = ModuleType("_taskcode_entry")
    importer.__file__ = str(tmp_path / "model.py")
    importer.llama = module  # type: ignore[attr-defined]
    files = [str(path), importer.__file__]
    del sys.modules["_taskcode_model"]
    try:
        module.norm = lambda x: x  # type: ignore[attr-defined]
        assert patched(files) == []  # through sys.modules alone, nothing is found
        assert patched(files, held=[importer]) == ["llama.py:norm"]
        assert patched([str(path)], held=[importer]) == []  # only task modules are followed
    finally:
        sys.modules["_taskcode_model"] = module


def test_a_rebinding_the_file_cannot_explain_is_caught_against_the_snapshot(
    model: tuple[ModuleType, Path],
) -> None:
    """A decorated function replaced by an object that hides it (a wrapper with no
    ``__wrapped__``) passes the file comparison; the snapshot taken before the candidate
    was imported still names it (corpus ``s30``: a slower kernel under the baseline's)."""
    module, path = model
    before = snapshot([str(path)])

    class Slower:
        def __init__(self, inner: object) -> None:
            self.inner = inner

    module.table = Slower(module.table)  # type: ignore[attr-defined]
    assert patched([str(path)]) == []  # a decorator that hides the function is let be
    assert changed_since(before) == ["llama.py:table"]


def test_sizes_a_task_sets_per_shape_are_not_code(model: tuple[ModuleType, Path]) -> None:
    """A task's own code may set its module's sizes for each shape (imported KernelBench
    models do): during the calls, a plain value replaced by another is let be; a function
    replaced is not."""
    module, path = model
    module.SIZE = 4096  # type: ignore[attr-defined]
    before = snapshot([str(path)])
    module.SIZE = 64  # type: ignore[attr-defined]
    assert changed_since(before) == ["llama.py:SIZE"]
    assert changed_since(before, data=False) == []
    module.norm = lambda x: x  # type: ignore[attr-defined]
    assert changed_since(before, data=False) == ["llama.py:norm"]


KERNEL = '''
import functools


def bench(fn):
    return fn()


class Kernel:
    """Like a Triton autotuner: called through a method, with state set as it runs."""

    def __init__(self):
        self.cache = {}
        self.best = None

    @functools.cached_property
    def do_bench(self):  # stored on the instance at first use, as Triton's autotuner does
        return bench

    def run(self, x):
        if "JSONDecoder" not in vars(self):  # a library's own names, bound at first use, as
            import json  # a Triton kernel keeps the compiler's at its first launch on a GPU

            self.JSONDecoder = json.JSONDecoder
            self.dumps = json.dumps
        self.best = ("config", self.do_bench(lambda: x))  # plain state set on every call
        self.cache[x] = self.best
        return x


kernel = Kernel()
'''


def test_a_method_shadowed_or_rebound_on_the_same_object_is_caught(tmp_path: Path) -> None:
    """The name keeps its object, but what the object calls changes: an instance attribute
    named like the method (corpus ``s34``, ``kernel.run = slower``) or the class's method
    rebound. State the object sets as it runs is not code."""
    path = tmp_path / "kernel.py"
    path.write_text(KERNEL)
    spec = importlib.util.spec_from_file_location("_taskcode_kernel", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files = [str(path)]
    before = snapshot(files, held=[module])
    module.kernel.run(3)
    assert changed_since(before) == []
    real = module.kernel.run
    module.kernel.run = lambda x: real(x)
    assert changed_since(before, data=False) == ["kernel.py:kernel.run"]
    del module.kernel.run
    method = module.Kernel.run
    module.Kernel.run = lambda self, x: method(self, x)
    assert changed_since(before, data=False) == ["kernel.py:Kernel.Kernel.run",
                                                 "kernel.py:kernel.Kernel.run"]  # fmt: skip
    module.Kernel.run = method
    assert changed_since(before) == []
    module.kernel.do_bench = lambda fn: fn()  # in place of what the property computes
    assert changed_since(before) == ["kernel.py:kernel.do_bench"]
    del module.kernel.do_bench
    import json

    # What the library bound at first use may not be swapped for anything else: another
    # library function, one under another name, or a wrapper.
    for other in (json.loads, functools.partial(json.dumps), lambda *a: json.dumps(*a)):
        module.kernel.dumps = other
        assert changed_since(before) == ["kernel.py:kernel.dumps"], other
    module.kernel.dumps = json.dumps
    module.kernel.loads = json.loads  # added under its own name: a library's own binding
    assert changed_since(before) == []
