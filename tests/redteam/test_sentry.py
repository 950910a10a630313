"""The sentry: candidate code that runs outside the candidate's own calls is seen.

The reference's ``make_inputs`` and the baseline run in the candidate's process, and the
interpreter runs anyone's Python at points no name lookup shows: signal handlers,
garbage-collector callbacks, finalizers, profile functions, a stand-in bound for one call
and unbound after. Candidate code run there can compute the answer while the inputs are
drawn, or slow the baseline, and undo itself before any check made in Python looks. The
sealed core evaluates every Python frame itself while the plan is under way and no
candidate call is, and notes the first frame of the candidate's files in its vault
(``outside_call``), whatever the candidate does afterwards.

Every candidate here computes the right answer in its calls: only its hook is wrong.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from redteam_corpus import TRITON, Entry, evaluate_entry, scale_job

from aka.config import TimingSettings
from aka.eval._pipeline import run_job

RIGHT = """import torch


def scale(x):
    return x * 2 + 1
"""

HOOKS = {
    # a collector callback: runs at every collection, wherever it happens
    "gc_callback": """
import gc as _gc

_state = {"n": 0}


def _on_collect(phase, info):
    _state["n"] += 1


_gc.callbacks.append(_on_collect)
_gc.set_threshold(3, 1, 1)
""",
    # a timer signal: Python runs the handler between bytecodes of whatever runs then
    "signal_handler": """
import signal as _signal

_state = {"n": 0}


def _on_alarm(signum, frame):
    _state["n"] += 1


_signal.signal(_signal.SIGALRM, _on_alarm)
_signal.setitimer(_signal.ITIMER_REAL, 0.0002, 0.0002)
""",
    # a profile function, reached without its name in the source
    "profile_function": """
import sys as _sys

_state = {"n": 0}


def _on_event(frame, event, arg):
    _state["n"] += 1


getattr(_sys, "setpro" + "file")(_on_event)
""",
    # finalizers of objects in reference cycles, collected during the next draw
    "finalizer": """
import gc as _gc


class _Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        _names = [str(i) for i in range(8)]
        _Cycle()  # another for the next collection


_gc.set_threshold(3, 1, 1)
# From 3.12 a full collection waits until the objects that survived the last one grow by a
# quarter, which torch's import makes rare: a cycle that outlived two collections would
# never be collected. Freezing what exists keeps that count small.
_gc.freeze()
_Cycle()
_made = {}
_scale = scale


def scale(x):
    out = _scale(x)
    # From 3.12 the collector runs where the interpreter next checks for pending work, not
    # at an allocation. A list display never checks: the lists it makes leave a collection
    # due as the call returns, for whatever Python runs next (a draw, a baseline call).
    _made[len(_made)] = [[], [], [], [], [], [], [], []]
    return out
""",
    # the library function the reference draws with, replaced for one draw at a time
    "stand_in_for_one_draw": """
_randn = torch.randn


def _stand_in(*a, **k):
    torch.randn = _randn  # gone before anything looks
    return _randn(*a, **k)


_scale = scale


def scale(x):
    out = _scale(x)
    torch.randn = _stand_in
    return out
""",
    # a thread started at import, looping in one frame: it evaluates no new frame while
    # the reference draws, but its frame is on its stack
    "thread_loop": """
import threading as _threading
import time as _time

_state = {"n": 0}


def _loop():
    while True:
        _state["n"] += 1
        _time.sleep(0.0001)


_threading.Thread(target=_loop, daemon=True).start()
""",
}

# The hook's code object renamed after a library's file, so that its frames pass for the
# library's: the renaming itself is seen.
FORGED = """
import gc as _gc

_state = {"n": 0}


def _on_collect(phase, info):
    _state["n"] += 1


_named = _on_collect.__code__.replace(co_filename=torch.__file__)
_on_collect.__code__ = _named
_gc.callbacks.append(_on_collect)
"""


def test_a_code_object_named_after_a_library_file_is_seen(tmp_path: Path) -> None:
    job, root = scale_job(tmp_path, RIGHT + FORGED)
    v = run_job(job, root)
    assert not v.correct and "dynamic_code" in v.flags, (v.flags, v.error)
    made = [e for e in v.evidence if e.startswith("dynamic_code") and "(the sentry)" in e]
    assert made and "made a code object named __init__.py" in made[0], v.evidence


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_candidate_code_run_outside_its_calls_is_seen(tmp_path: Path, hook: str) -> None:
    # one that runs only in a draw is judged with the draws in the candidate's process, as
    # on a GPU (on the CPU the input drawer draws elsewhere: aka.eval._drawer)
    in_draw = hook == "stand_in_for_one_draw"
    job, root = scale_job(tmp_path, RIGHT + HOOKS[hook], drawer=not in_draw)
    v = run_job(job, root)
    assert not v.correct and "outside_call" in v.flags, (v.flags, v.error)
    seen = [e for e in v.evidence if e.startswith("outside_call")]
    assert seen and "kernel.py" in seen[0] and "(the sentry)" in seen[0], v.evidence


def test_code_the_candidate_runs_in_its_own_calls_is_not_seen(tmp_path: Path) -> None:
    # import-time work, closures, generators, a class with __call__, an exception thrown
    # into a generator and a cached helper: all inside the candidate's calls or import
    source = """import functools

import torch

_table = [i * i for i in range(16)]


@functools.lru_cache(maxsize=None)
def _factor():
    return 2


class _Affine:
    def __call__(self, x):
        return x * _factor() + 1


def _gen():
    try:
        yield 1
    except KeyError:
        yield 2


def scale(x):
    g = _gen()
    next(g)
    assert g.throw(KeyError()) == 2
    return sum(_Affine()(v) for v in [x])
"""
    job, root = scale_job(tmp_path, source)
    v = run_job(job, root)
    assert v.correct and not v.flags, (v.flags, v.error)
    assert v.timing, "the candidate was not timed"
    assert not any("no sentry" in n for n in v.notes), v.notes  # there is one on 3.11-3.13


# A stand-in for the library function only the baseline calls (``torch.empty_like`` in
# the softmax task's kernel, never in its ``make_inputs``), that lets the warm-up calls
# go: only the baseline's calls in the timing loop run it, and the loop watches a keyed
# quarter of its rounds.
BASELINE_HOOK = """
_empty_like = torch.empty_like
_calls = {"n": 0}


def _stand_in(*a, **k):
    _calls["n"] += 1
    torch.empty_like = _empty_like
    return _empty_like(*a, **k)


_softmax = softmax


def softmax(x):
    out = _softmax(x)
    _calls["n"] += 1
    if _calls["n"] > 40:  # past the checked calls and the warm-up
        torch.empty_like = _stand_in
    return out
"""


def test_a_hook_in_the_baseline_s_timed_calls_is_seen_in_a_watched_round(tmp_path: Path) -> None:
    kernel = (
        Path(__file__).resolve().parents[2] / "tasks/triton2triton/llm/softmax/source/kernel.py"
    )
    entry = Entry("baseline_hook", "triton2triton/llm/softmax", 4, time=True, bundled=True)
    timing = TimingSettings(max_time_s=1.0, min_samples=40)
    s = evaluate_entry(entry, tmp_path, source=kernel.read_text() + BASELINE_HOOK, timing=timing)
    assert not s.correct and "outside_call" in s.hack_flags, (s.hack_flags, s.error)
    seen = [e for e in s.evidence if e.startswith("outside_call")]
    assert seen and "_stand_in ran in a baseline call" in seen[0], s.evidence


# A timer signal's handler made of C callables (no frame of the candidate's runs in it):
# it keeps the frame it interrupted. The candidate returns garbage once one of them was the
# reference's make_inputs at work, as a hook that read the inputs there (numpy over their
# memory runs no operator) and answered them ahead would. While inputs are drawn, the core
# sets such handlers aside, turns the collector off and the thread's profile function.
SEEN_IN_DRAW = """import functools
import signal

import torch

_frames = {}
signal.signal(signal.SIGPROF, functools.partial(dict.__setitem__, _frames))
signal.setitimer(signal.ITIMER_PROF, 0.0001, 0.0001)


def _drawing(frame):
    while frame is not None:
        if frame.f_code.co_name == "make_inputs":
            return True
        frame = frame.f_back
    return False


def scale(x):
    frame = _frames.pop(signal.SIGPROF, None)
    if _drawing(frame):
        _frames["drawn"] = True
    if "drawn" in _frames:
        return torch.zeros_like(x)
    return x * 2 + 1
"""


def test_a_handler_of_c_callables_never_runs_while_inputs_are_drawn(tmp_path: Path) -> None:
    # with the draws in the candidate's process, as on a GPU: the quiet draw is what holds
    # (its frame walk is a static finding, ``introspection``; what the handler saw is
    # what this asks: every case right, so it never saw a draw)
    job, root = scale_job(tmp_path, SEEN_IN_DRAW, drawer=False)
    v = run_job(job, root)
    assert v.cases and all(c["ok"] for c in v.cases), (v.flags, v.error)
    assert set(v.flags) == {"introspection"}, (v.flags, v.error)


# A ``sys.monitoring`` tool whose callback is a C callable: every Python function that starts
# lands in a dict, the reference's ``make_inputs`` too if its callbacks fire in a draw.
MONITOR_IN_DRAW = """import functools
import sys

import torch

_started = {}
_m = sys.monitoring
_m.use_tool_id(4, "probe")
_m.register_callback(4, _m.events.PY_START, functools.partial(dict.__setitem__, _started))
_m.set_events(4, _m.events.PY_START)


def scale(x):
    if any(code.co_name == "make_inputs" for code in list(_started)):
        return torch.zeros_like(x)
    return x * 2 + 1
"""


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is Python 3.12's")
def test_a_monitoring_callback_never_runs_while_inputs_are_drawn(tmp_path: Path) -> None:
    job, root = scale_job(tmp_path, MONITOR_IN_DRAW, drawer=False)  # as on a GPU
    v = run_job(job, root)
    assert v.correct and not v.flags, (v.flags, v.error)


# A thread whose target is a C callable, reached through a module that imported threading
# (no import of it to see): it runs no frame of the candidate's, and a chain of C callables
# like it can read what is drawn while torch's operators let the lock go.
THREAD_OF_C_CALLABLES = """import functools
import time

import torch
import triton
import triton.language as tl

torch.cuda.threading.Thread(target=functools.partial(time.sleep, 60), daemon=True).start()


@triton.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + 1, mask=mask)


def scale(x):
    y = torch.empty_like(x)
    _scale[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096)
    return y
"""


def test_a_thread_started_by_the_candidate_is_seen_where_nothing_it_uses_starts_one(
    tmp_path: Path,
) -> None:
    # judged where threads may start, as on a GPU (a contained CPU evaluation of a Triton
    # task refuses one: the candidate then fails to import)
    job, root = scale_job(tmp_path / "triton", THREAD_OF_C_CALLABLES, TRITON, contain=False)
    v = run_job(job, root)
    assert not v.correct and "background_thread" in v.flags, (v.flags, v.error)
    seen = [e for e in v.evidence if e.startswith("background_thread") and "(the sentry)" in e]
    assert seen and "a thread started after the evaluation's core" in seen[0], v.evidence
    # where candidates may build native code (torch's compiler keeps threads), a note
    job, root = scale_job(tmp_path / "torch", THREAD_OF_C_CALLABLES, contain=False)
    v = run_job(job, root)
    assert not any("(the sentry)" in e for e in v.evidence), v.evidence
    assert any("not judged for this backend" in n for n in v.notes), v.notes
