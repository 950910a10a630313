"""The input drawer (``aka.eval._drawer``): on the CPU every call's inputs are drawn in a
process forked before any candidate code existed, and arrive as bytes the sealed core
reads into tensors, so nothing the candidate leaves in its own process runs while they
are drawn. Each test lays out a task of its own whose ``make_inputs`` reports where and
how it ran, beside the tensor, and a candidate that is right only if that holds."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from redteam_corpus import CORPUS, scale_job

from aka.eval._pipeline import Verdict, run_job

# make_inputs hands the kernel, beside a transposed (dense, not contiguous) input, what
# it knows of the process it ran in: its pid, and whether that process is dumpable.
REFERENCE = """
import ctypes, os
import torch

def make_inputs(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(4, shape["N"] // 4, generator=g) * 3 + 1).to(dtype=dtype, device=device)
    dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
    return (x.t(), {"pid": os.getpid(), "dumpable": dumpable})

def reference(x, where):
    return x.double() * 2 + 1
"""
BASE = "def scale(x, where):\n    return x * 2 + 1\n"


def _run(
    tmp_path: Path, candidate: str, reference: str = REFERENCE, drawer: bool = True
) -> Verdict:
    job, root = scale_job(tmp_path, candidate)
    (root / "task" / "reference.py").write_text(reference)
    (root / "base" / "kernel.py").write_text(BASE)
    return run_job(dataclasses.replace(job, time=False, drawer=drawer), root)


# Right only where the inputs were drawn in another process that cannot be read, and
# came with their strides.
WHERE = """
import os

def scale(x, where):
    drawn_apart = where["pid"] != os.getpid() and where["dumpable"] == 0
    return x * 2 + 1 if drawn_apart and x.stride() == (1, x.shape[0]) else x * 2
"""


def test_inputs_are_drawn_in_a_process_apart_that_cannot_be_read(tmp_path: Path) -> None:
    v = _run(tmp_path, WHERE)
    assert v.correct, (v.error, v.cases[:1])


def test_without_the_drawer_the_inputs_are_drawn_beside_the_candidate(tmp_path: Path) -> None:
    """The control: the same candidate, the drawer turned off (``AKA_EVAL_DRAWER=0``)."""
    v = _run(tmp_path, WHERE, drawer=False)
    assert v.compiled["ok"] and not v.correct, (v.error, v.flags)
    assert "max abs error" in (v.error or ""), v.error  # wrong, not broken


# A hook that every draw in this process would run: with the drawer none does, and the
# candidate (which answers right only from what the hook saw) is wrong.
HOOK = """
import torch

seen = []
_randn = torch.randn

def _watch(*args, **kwargs):
    out = _randn(*args, **kwargs)
    seen.append(out)
    return out

torch.randn = _watch
torch.randn(1)  # the hook works in this process

def scale(x, where):
    return x * 2 + 1 if len(seen) > 1 else x * 0
"""


def test_a_hook_on_what_make_inputs_calls_never_sees_a_draw(tmp_path: Path) -> None:
    v = _run(tmp_path, HOOK)
    assert v.compiled["ok"] and not v.correct, (v.error, v.flags)
    # wrong in every case, whatever the tripwires also say of the rebinding
    assert v.cases and all(not c["ok"] and "max abs error" in c["error"] for c in v.cases)


# Library data a draw consults rather than a function it calls (corpus file
# ``s56_device_set_member``): ``with torch.device(...)`` asks ``func in
# _device_constructors()`` of every operator of the draw, one cached set, and a member
# hashed as ``Tensor.to`` has its ``__eq__`` asked whenever the draw converts.
DEVICE_REFERENCE = """
import torch

def make_inputs(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.device(device):
        x = torch.randn(shape["N"], generator=g).to(dtype=dtype)
    return (x, None)

def reference(x, where):
    return x.double() * 2 + 1
"""
SET_MEMBER = """
import torch
from torch.utils._device import _device_constructors

asked = []


class _Member:
    def __hash__(self):
        return hash(torch.Tensor.to)

    def __eq__(self, other):
        asked.append(other)
        return False


_device_constructors().add(_Member())

def scale(x, where):
    return x * 2 + 1 if asked else x * 0
"""


@pytest.mark.parametrize("drawer", [True, False], ids=["drawer", "control"])
def test_library_data_a_draw_consults_is_never_asked_with_the_drawer(
    tmp_path: Path, drawer: bool
) -> None:
    """With the drawer the member is never asked, and the candidate that answers right
    only once it was is wrong in every case; the control (the drawer off) shows the
    member is asked by draws in the candidate's process (right in every case; the
    sentry names its Python ``__eq__``, which a chain of C callables would not have),
    so the test can fail."""
    v = _run(tmp_path, SET_MEMBER, reference=DEVICE_REFERENCE, drawer=drawer)
    assert v.compiled["ok"], v.compiled
    if drawer:
        assert v.cases and all(not c["ok"] for c in v.cases), v.cases[:2]
    else:
        assert v.cases and all(c["ok"] for c in v.cases), (v.error, v.cases[:1])


def test_an_error_in_make_inputs_is_the_task_s_with_its_message(tmp_path: Path) -> None:
    broken = REFERENCE.replace(
        "    g = torch", "    raise ValueError('no inputs for this shape')\n    g = torch"
    )
    v = _run(tmp_path, BASE, reference=broken)
    assert not v.correct
    text = " ".join(str(c) for c in v.cases) + str(v.error)
    assert "make_inputs (in the input drawer)" in text and "no inputs for this shape" in text


def test_an_argument_the_drawer_cannot_send_is_named(tmp_path: Path) -> None:
    odd = REFERENCE.replace('{"pid": os.getpid(), "dumpable": dumpable}', "(lambda: 0)")
    v = _run(tmp_path, BASE, reference=odd)
    assert not v.correct
    text = " ".join(str(c) for c in v.cases) + str(v.error)
    assert "make_inputs (in the input drawer)" in text and "lambda" in text, text[:600]


# The drawer's pipes, found in the harness's frame, with a pipe of the candidate's put in
# place of the answers under the same number (a forged answer already in it).
SWAP = """
import os, struct, sys

f = sys._getframe()
while f is not None and not isinstance(f.f_locals.get("draws"), tuple):
    f = f.f_back
pid, req, ans = f.f_locals["draws"]
r, w = os.pipe()
os.write(w, struct.pack("<QII", 0, 0, 0))
os.dup2(r, ans)

def scale(x, where):
    return x * 2 + 1
"""


def test_a_pipe_put_in_place_of_the_drawer_s_is_refused(tmp_path: Path) -> None:
    v = _run(tmp_path, SWAP)
    assert not v.correct
    errors = [c.get("error") or "" for c in v.cases]
    assert errors and all("pipes were replaced" in e for e in errors), errors[:2]


def test_the_baseline_is_timed_where_the_candidate_cannot_slow_it(tmp_path: Path) -> None:
    """Corpus ``s10`` swaps the ``torch`` its baseline's module names for a proxy that
    repeats every call (here four hundred times). With the drawer and its timer on
    (``AKA_EVAL_TIMER=1``), the baseline's calls are timed by the timer, forked before the
    candidate existed, and the swap does not reach them; the control, the drawer off,
    shows that it slows them in the candidate's process. The tripwire names the swap
    either way."""
    s10 = (CORPUS / "s10_baseline_globals.py").read_text()
    heavier = s10.replace("range(49)", "range(399)")  # every library call four hundred times
    assert heavier != s10
    pairs = {}
    for drawer in (True, False):
        job, root = scale_job(tmp_path / str(drawer), heavier, drawer=drawer, timer=True)
        v = run_job(job, root)
        assert "task_code_patched" in v.flags, v.flags
        (pairs[drawer],) = [t["pair"] for t in v.timing]
    timer, control = pairs[True], pairs[False]
    assert 4 * timer["baseline"]["median_s"] < control["baseline"]["median_s"], pairs
    assert 4 * timer["speedup"] < control["speedup"], pairs


# A child forked at import holds a copy of every pipe of the process, the drawer's too,
# for longer than the evaluation may take.
HOLDER = """
import os, time

if os.fork() == 0:
    time.sleep(60)
    os._exit(0)

def scale(x, where):
    return x * 2 + 1
"""


def test_a_process_holding_the_drawer_s_pipes_does_not_hold_the_evaluation(
    tmp_path: Path,
) -> None:
    """The drawer leaves on the core's stop request, not on the end of its pipe, which a
    copy in the candidate's child would keep open: the evaluation ends, the child is
    named and gone."""
    t0 = time.monotonic()
    v = _run(tmp_path, HOLDER)
    assert time.monotonic() - t0 < 45.0
    assert not v.correct and "background_process" in v.flags, (v.flags, v.error)


def test_the_pipes_cipher_is_rfc_8439_chacha20() -> None:
    """Every message on the drawer's and the timer's pipes is enciphered with ChaCha20 (a
    tap of a pipe reads ciphertext): the core's cipher gives RFC 8439's test vector
    (section 2.4.2) and the same bytes back when applied twice."""
    from aka.eval import _native

    core = _native.load(str(_native.ensure_built("cpu")))
    key, nonce = bytes(range(32)), bytes.fromhex("000000000000004a00000000")
    text = (
        b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip "
        b"for the future, sunscreen would be it."
    )
    sealed = core.chacha20(key, 1, nonce, text)
    assert sealed.hex().startswith("6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afcc")
    assert sealed.hex().endswith("5af90bbf74a35be6b40b8eedf2785e42874d")
    assert core.chacha20(key, 1, nonce, sealed) == text


# The core's own drawer calls, reached through the harness's frame: a fork of the
# candidate's carries the key, and a red-team fork stopped the drawer with a sealed stop and
# served the draws itself. Right only where both are refused.
SERVE_ITSELF = """
import os

_refused = []


def _seal():
    try:
        raise ZeroDivisionError
    except ZeroDivisionError as e:
        f = e.__traceback__.tb_frame
    while f is not None and "seal" not in f.f_locals:
        f = f.f_back
    return f.f_locals["seal"]


def scale(x, where):
    if not _refused:
        seal = _seal()
        for call in (seal.stop_drawer, lambda: seal.serve_draws(None, 0, 1, "d")):
            try:
                call()
            except RuntimeError as e:
                _refused.append("seal:" in str(e))
    return x * 2 + 1 if _refused == [True, True] else x * 0
"""


def test_the_drawer_is_neither_stopped_nor_served_from_candidate_code(tmp_path: Path) -> None:
    v = _run(tmp_path, SERVE_ITSELF)
    assert v.compiled["ok"] and v.cases, (v.error, v.compiled)
    assert all(c["ok"] for c in v.cases), (v.error, v.cases[:1])


# Inputs that take longer to draw than the core's bound for fresh sets (0.5 ms): without
# a drawer the core times the candidate on a pool of sets drawn ahead, with a new set in
# about one round in four, and compares the two (the replay check).
SLOW_REFERENCE = REFERENCE.replace(
    "    g = torch.Generator()", "    import time\n    time.sleep(0.002)\n    g = torch.Generator()"
)


@pytest.mark.parametrize("drawer", [True, False])
def test_with_the_drawer_every_timed_call_gets_a_new_set(tmp_path: Path, drawer: bool) -> None:
    """A pooled set reached its window after a ping and a new one after the drawer's work,
    and that alone made an honest kernel's calls on new sets about twice as slow on the
    2-core CPU: flagged ``input_replay``. With the drawer, no set is pooled."""
    job, root = scale_job(tmp_path, "def scale(x, where):\n    return x * 2 + 1\n")
    (root / "task" / "reference.py").write_text(SLOW_REFERENCE)
    (root / "base" / "kernel.py").write_text(BASE)
    v = run_job(dataclasses.replace(job, time=True, drawer=drawer), root)
    assert v.correct and v.flags == [], (v.error, v.flags)
    methods = {item["pair"]["method"] for item in v.timing}
    want = "drawn in the drawer" if drawer else "a keyed pick of 8 fresh sets"
    assert methods and all(want in m for m in methods), methods


def test_the_baseline_alone_is_run_again_when_the_draws_move(tmp_path: Path) -> None:
    """What the baseline's calls run alone is kept per task for the evaluator's lifetime;
    with the drawer its ``make_inputs`` runs elsewhere, so its operators are not those of a
    run without it. Kept under one key, an evaluation without the drawer after one with
    it flagged ``forbidden_api`` on a bundled task's own starting code."""
    from aka.eval._alone import _baseline_key

    job, root = scale_job(tmp_path, BASE)
    keys = {_baseline_key(dataclasses.replace(job, drawer=d, timer=t), root)
            for d, t in ((False, False), (True, False), (True, True))}  # fmt: skip
    assert len(keys) == 3
    assert _baseline_key(job, root) == _baseline_key(dataclasses.replace(job), root)
