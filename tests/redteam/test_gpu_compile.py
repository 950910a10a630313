"""On the CPU, the Triton kernels a candidate launched must compile for a GPU
(aka.eval._gpu_compile): the interpreter runs a kernel's body as Python, so a body that
computes on the host is right there and no kernel anywhere else.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from redteam_corpus import ADVERSARIAL, BUNDLED, HONEST, evaluate_entry

from aka.eval import _gpu_compile

REPO = Path(__file__).resolve().parents[2]

KERNELS = """
import helpers
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def _twice(x):
    return x * 2


@triton.jit
def good(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, _twice(x) + tl.max(x, axis=0) - tl.sum(x, axis=0), mask=m)


@triton.jit
def via_module(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, helpers.negate(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


@triton.jit
def scaled(x_ptr, y_ptr, n, BLOCK: tl.constexpr, ALPHA: tl.constexpr = 3.0):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * ALPHA, mask=offs < n)


@triton.jit
def host(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * float(np.max(x.handle.data)), mask=offs < n)
"""

HELPERS = """import triton
import triton.language as tl


@triton.jit
def negate(x):
    return -x
"""

SCRIPT = """
import importlib.util, json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton
from aka.eval import _gpu_compile
from aka.eval._kernels import LaunchCounter

counter = LaunchCounter()
counter.install()
counter.kinds = _gpu_compile.Launches()
sys.path.insert(0, os.path.dirname(sys.argv[1]))
spec = importlib.util.spec_from_file_location("kernels", sys.argv[1])
k = importlib.util.module_from_spec(spec)
spec.loader.exec_module(k)
x, y = torch.randn(64), torch.empty(64)
for name in sys.argv[2:]:
    getattr(k, name)[(1,)](x, y, 64, BLOCK=64)
print(json.dumps(_gpu_compile.check(counter.kinds, os.path.dirname(sys.argv[1]))))
"""


def _check(tmp_path: Path, *names: str) -> tuple[list[str], list[str]]:
    """What the check says of the kernels ``names`` launched under the interpreter, in a
    process of its own (the interpreter is chosen when triton is imported)."""
    import json

    (tmp_path / "kernels.py").write_text(textwrap.dedent(KERNELS))
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "run.py").write_text(SCRIPT)
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path / "kernels.py"), *names],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    )  # fmt: skip
    failures, notes = json.loads(out.stdout.strip().splitlines()[-1])
    return failures, notes


def test_kernels_that_compile_pass_helpers_and_defaults_included(tmp_path: Path) -> None:
    """A helper ``@triton.jit`` function called from a kernel's body leaves the
    interpreter's builtins in ``triton.language`` (no restore), and the interpreter built
    Triton's own ``tl.max`` and ``tl.sum`` as interpreted functions, as it did a helper
    in another module of the candidate's: the check compiles anyway (every bundled
    Triton task's starting kernel does, as the quickstart's noop)."""
    assert _check(tmp_path, "good", "scaled", "via_module") == ([], [])


def test_a_kernel_that_computes_on_the_host_does_not_compile(tmp_path: Path) -> None:
    failures, notes = _check(tmp_path, "good", "host")
    assert len(failures) == 1 and failures[0].startswith("host does not compile for a GPU")
    assert notes == []


def test_where_triton_cannot_compile_here_the_check_is_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unavailable() -> None:
        raise RuntimeError("no NVIDIA backend")

    monkeypatch.setattr(_gpu_compile, "_compiler", unavailable)
    failures, notes = _gpu_compile.check(_gpu_compile.Launches())
    assert failures == [] and notes == [
        "GPU compile check unavailable: RuntimeError: no NVIDIA backend"
    ]


def test_the_evaluator_fails_a_kernel_only_the_interpreter_runs(tmp_path: Path) -> None:
    (entry,) = [e for e in ADVERSARIAL if e.name == "s35_interpreter_host_values"]
    scored = evaluate_entry(entry, tmp_path)
    assert not scored.correct and "gpu_compile" in scored.hack_flags, scored.error


@pytest.mark.parametrize("name", ["honest_triton_basic", "honest_triton_autotune"])
def test_honest_triton_kernels_compile(tmp_path: Path, name: str) -> None:
    (entry,) = [e for e in HONEST if e.name == name]
    scored = evaluate_entry(entry, tmp_path)
    assert scored.correct and not scored.hack_flags, scored.error


STARTS = sorted(
    str(p.parent.relative_to(BUNDLED))
    for p in BUNDLED.glob("*/*/*/task.yaml")
    if p.parts[-4] in ("triton2triton", "e2e")
)


@pytest.mark.parametrize("task", STARTS)
def test_every_bundled_starting_kernel_compiles(tmp_path: Path, task: str) -> None:
    """The quickstart's noop submits a task's starting code: on the CPU it must stay
    correct with no flag, its Triton kernels compiled for a GPU."""
    spec = importlib.util.spec_from_file_location("redteam_gpu", REPO / "tools" / "redteam_gpu.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("redteam_gpu", script)
    spec.loader.exec_module(script)
    yaml_spec = script.bundled_spec(task)
    entry_file = yaml_spec["entry"].split(":")[0]
    target = entry_file if entry_file in yaml_spec["editable"] else yaml_spec["editable"][0]
    shutil.copy(BUNDLED / task / "source" / target, tmp_path / "start.py")
    row = script.evaluate("start", task, tmp_path, "cpu", bundled=True)
    assert row["correct"] and not row["flags"], (row["flags"], row["evidence"], row["error"])


LAUNCH_SCRIPT = """
import importlib.util, json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from aka.eval import _gpu_compile
from aka.eval._kernels import LaunchCounter

counter = LaunchCounter()
counter.install()
counter.kinds = _gpu_compile.Launches()
spec = importlib.util.spec_from_file_location("launches", sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))
print(json.dumps(_gpu_compile.check(counter.kinds, os.path.dirname(sys.argv[1]))))
"""
HEAD = """import numpy as np
import torch
import triton
import triton.language as tl

x, y = torch.randn(64), torch.empty(64)
"""


def _launched(tmp_path: Path, code: str) -> tuple[list[str], list[str]]:
    """What the check says after ``code`` (a file of kernels and their launches, with
    ``x`` and ``y`` given) ran under the interpreter, in a process of its own."""
    import json

    (tmp_path / "launches.py").write_text(HEAD + textwrap.dedent(code))
    (tmp_path / "run.py").write_text(LAUNCH_SCRIPT)
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path / "launches.py")],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    )  # fmt: skip
    failures, notes = json.loads(out.stdout.strip().splitlines()[-1])
    return failures, notes


COPY = """
@triton.jit
def copy(x_ptr, y_ptr, n, f, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, f(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
"""


def test_a_function_of_the_host_handed_to_a_kernel_does_not_compile(tmp_path: Path) -> None:
    """The body calls what it is given on its block; the interpreter runs any Python
    there (numpy on the block's data), a GPU kernel takes no such argument."""
    failures, _ = _launched(tmp_path, COPY + "copy[(1,)](x, y, 64, lambda v: v, BLOCK=64)\n")
    assert len(failures) == 1 and "argument f is a function" in failures[0], failures


def test_launches_past_what_the_check_compiles_are_a_failure(tmp_path: Path) -> None:
    """Launching many variants first must not push the one that only the interpreter
    runs out of what is compiled."""
    many = """
    @triton.jit
    def fill(y_ptr, v, BLOCK: tl.constexpr):
        tl.store(y_ptr + tl.arange(0, BLOCK), tl.zeros([BLOCK], tl.float32) + v)

    for k in range(40):
        fill[(1,)](y, 0, BLOCK=2 ** (k % 6), num_warps=1 + k % 7)
    """
    failures, _ = _launched(tmp_path, many)
    assert any("more distinct kernel launches than the 32" in f for f in failures), failures


def test_an_object_that_raises_when_read_does_not_turn_the_check_off(tmp_path: Path) -> None:
    """A module-level object whose class is named like the interpreter's kernels and
    raises when the check reads its function: the check still compiles what launched."""
    decoy = """
    class InterpretedFunction:
        @property
        def fn(self):
            raise RuntimeError("no")

    DECOY = InterpretedFunction()

    @triton.jit
    def host(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, x * float(np.max(x.handle.data)), mask=offs < n)

    host[(1,)](x, y, 64, BLOCK=64)
    """
    failures, notes = _launched(tmp_path, decoy)
    assert len(failures) == 1 and failures[0].startswith("host does not compile"), (failures, notes)


HOST_THEN = """
import functools

@triton.jit
def host(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * float(np.max(x.handle.data)), mask=offs < n)

@triton.jit
def clean(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

host[(1,)](x, y, 64, BLOCK=64)
"""


@pytest.mark.parametrize(
    "after",
    [
        "host.fn.__code__ = clean.fn.__code__",  # the interpreter keeps what it rewrote
        "host.fn = functools.partial(host.fn)",  # no Python function left to find
    ],
)
def test_what_ran_is_what_is_compiled(tmp_path: Path, after: str) -> None:
    """A kernel's function or code put in place after its first launch changes what the
    check would read, not what the interpreter runs: the check compiles what ran, and
    names the change."""
    failures, _ = _launched(tmp_path, HOST_THEN + after + "\nhost[(1,)](x, y, 64, BLOCK=64)\n")
    assert failures == ["host's function or code was replaced after it ran"], failures
