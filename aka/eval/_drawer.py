"""The input drawer: a process that draws every call's inputs where no candidate code runs.

The sealed core draws each call's inputs with the task's ``make_inputs``, which is Python.
In the candidate's process everything it reaches (library functions, the objects and
data they consult, the interpreter's hooks) is the candidate's to rebind, and red-team
rounds computed the answer there, outside every timed window, by ways no tripwire named
(docs/security.md, "What is not a boundary"). So, switched on, a CPU evaluation process forks a drawer
once its core exists and last before the candidate's import: the core sends it a request
per draw over one pipe and reads the tensors from its answer on another, in C++
(``drawer::Client`` in ``_seal/seal.cpp``), and nothing of the drawer is reachable from the
candidate's process (see that comment for how).

Every message on the pipes is sealed (``drawer::Sealing``: ChaCha20 and a one-time MAC,
keyed from the core's key, which the forked processes hold and the candidate's code never
reads): a red-team round had a helper process of the candidate's open the pipes again
through ``/proc``, read each answer before the core, compute the output outside every
window and put the bytes back (9.6-11.7x on ``softmax``, unflagged). Sealed, a tap reads
ciphertext and a forged or altered message ends the evaluation as an error. So the drawer
is forked last before the candidate's import, after the core read its key.

It is on for CPU evaluations unless ``AKA_EVAL_DRAWER=0`` (:mod:`aka.eval._switches`).
A call's inputs then arrive after a round trip to another process, and what that leaves
behind (the processor handed over and back, caches refilled) reaches into the window
that follows; so the baseline draws from the drawer whenever the candidate does, and
both arms enter every window from the same round trip. When only the candidate's calls
drew (the baseline kept its first set), an A/A of the fixture ``torch/ops/affine`` (4 µs
calls) on the 2-core CPU came out at 0.46-0.59; drawn alike, ten runs of
``tools/drawer_aa.py --runs 10`` gave per-shape ratios of 0.994-1.000 with it against
0.970-0.990 without (``docs/results/cpu_drawer_aa_3.json``), and sealed 0.969-1.034
(``cpu_drawer_aa_5.json``). The core waits for each answer busily, yielding the
processor at each empty poll (``spin_until_readable``): when it gave up after 50 ms and
slept, a draw slowed by a loaded machine was followed by a call timed from a cold
start. Waiting up to two seconds and yielding, ten runs with two busy processes beside
them (``--load 2``) gave 0.986-1.011 with it against 0.986-1.000 without
(``cpu_drawer_aa_6.json``). With a pool of sets drawn ahead (the core's way when a draw
costs more than 0.5 ms), a full test run on the 2-core machine flagged honest candidates
``input_replay``: calls on a newly drawn set (the drawer's work, then the bytes through
the pipe into the buffers) ran slower than those on a pooled set (after a ping), 89.8
against 47 µs on a 65,536-element input, past the replay check's bound. So with the
drawer every timed call gets a new set, however long it takes to draw
(``test_drawer.py::test_with_the_drawer_every_timed_call_gets_a_new_set``): no set
repeats, so there is nothing to replay, and both arms draw alike.

``AKA_EVAL_TIMER=1`` also times the baseline in a process of its own (the timer, with a
drawer of its own), so that nothing the candidate does in its process can slow it. Off by
default: the same ten runs gave 0.92-1.22 with it (``docs/results/cpu_drawer_aa_4.json``),
calls of two processes differing by a few hundred nanoseconds on a 4 µs call where one
process's calls interleave closely. On a GPU the draws stay in the candidate's process,
watched by the tripwires of the draw (quiet draws, the recorder, the library snapshot): a
drawer there needs a CUDA context of its own and the inputs moved between two (CUDA IPC),
whose cost per timed call ``tools/bench_drawer.py`` measures.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

Spec = tuple[int, int, int]
"""(a forked process's pid, its request pipe's write end, its answer pipe's read end)."""


def wanted(device: str, on: bool) -> bool:
    """Whether an evaluation on ``device`` draws its inputs in a drawer: on the CPU, where
    the evaluator's switch is on (unless ``AKA_EVAL_DRAWER=0``, :mod:`aka.eval._switches`); the
    evaluator tells the candidate process in its request."""
    return on and device == "cpu"


def start(seal: Any, make_inputs: Callable[..., Any], *, timer: bool) -> tuple[Spec, Spec | None]:
    """Fork the drawer (and, with ``timer``, the baseline's timer with a drawer of its own)
    from this process, once the sealed core ``seal`` exists (it holds the baseline, the
    plan and the key their pipes are sealed with) and before any candidate code does; the
    core adopts them (``seal.adopt_drawer``). The pipes are close-on-exec, so nothing the
    candidate starts by ``exec`` inherits them."""
    draws = _fork(lambda r, w: seal.serve_draws(make_inputs, r, w, "d"))
    if not timer:
        return draws, None
    return draws, _fork(lambda r, w: _time_baseline(seal, make_inputs, r, w))


def _time_baseline(seal: Any, make_inputs: Callable[..., Any], rfd: int, wfd: int) -> None:
    """The timer: its own drawer first, so that each baseline call's inputs come over a
    pipe as the candidate's do, then its loop; its drawer leaves with it."""
    seal.adopt_drawer(_fork(lambda r, w: seal.serve_draws(make_inputs, r, w, "b")), None, "b")
    try:
        seal.serve_baseline(rfd, wfd)
    finally:
        seal.stop_drawer()


def _fork(serve: Callable[[int, int], None]) -> Spec:
    """A child serving requests on a new pair of pipes until its stop request (or its
    parent's end), then gone."""
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(req_w)
            os.close(ans_r)
            serve(req_r, ans_w)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(req_r)
    os.close(ans_w)
    return pid, req_w, ans_r
