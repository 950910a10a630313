"""The input drawer: a process that draws every call's inputs where no candidate code runs.

The sealed core draws each call's inputs with the task's ``make_inputs``, which is Python.
In the candidate's process everything it reaches (library functions, the objects and
data they consult, the interpreter's hooks) is the candidate's to rebind, and red-team
rounds computed the answer there, outside every timed window, by ways no tripwire named
(docs/security.md, "What is not a boundary"). So, switched on, a CPU evaluation process forks
a drawer right after loading the reference, before the baseline and the candidate exist in
it: the core sends it a request per draw over one pipe and reads the tensors from its
answer on another, in C++ (``drawer::Client`` in ``_seal/seal.cpp``), and nothing of the
drawer is reachable from the candidate's process (see that comment for how).

On by default on the CPU (``AKA_EVAL_DRAWER=0`` turns it off, :mod:`aka.eval._switches`).
A call's inputs then arrive after a round trip to another process, and what that leaves
behind (the processor handed over and back, caches refilled) reaches into the window
that follows; so the baseline draws from the drawer whenever the candidate does, and
both arms enter every window from the same round trip. When only the candidate's calls
drew (the baseline kept its first set), an A/A of the fixture ``torch/ops/affine`` (4 µs
calls) on the 2-core CPU came out at 0.46-0.59; drawn alike, ten runs of
``tools/drawer_aa.py --runs 10`` gave per-shape ratios of 0.994-1.000 with it against
0.970-0.990 without (``docs/results/cpu_drawer_aa_3.json``). On a GPU the draws stay in
the candidate's process, watched by the tripwires of the draw (quiet draws, the recorder,
the library snapshot): a drawer there needs a CUDA context of its own and the inputs
moved between two (CUDA IPC), whose cost per timed call ``tools/bench_drawer.py``
measures.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

Spec = tuple[int, int, int]
"""(the drawer's pid, the request pipe's write end, the answer pipe's read end)."""


def wanted(device: str, on: bool) -> bool:
    """Whether an evaluation on ``device`` draws its inputs in a drawer: on the CPU, where
    the evaluator's switch is on (``AKA_EVAL_DRAWER=1``, :mod:`aka.eval._switches`); the
    evaluator tells the candidate process in its request."""
    return on and device == "cpu"


def start(core: ModuleType, make_inputs: Callable[..., Any]) -> Spec:
    """Fork the drawer serving ``make_inputs`` (call it before any candidate code exists
    here); the pipes are close-on-exec, so nothing the candidate starts inherits them."""
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the drawer: serve until the core's stop request (or its end), then go
        code = 0
        try:
            os.close(req_w)
            os.close(ans_r)
            core.drawer_serve(make_inputs, req_r, ans_w)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(req_r)
    os.close(ans_w)
    return pid, req_w, ans_r


def stop(spec: Spec | None) -> None:
    """End a drawer no core adopted (the core was not made): close its pipes, reap it."""
    if spec is None:
        return
    pid, req_w, ans_r = spec
    for fd in (req_w, ans_r):
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
