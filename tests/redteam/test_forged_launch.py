"""A launch the candidate reports itself: the sealed core's ``launched``, which Triton's
launch hook calls from inside every launch, is reachable from candidate code through the
harness's frames. A red-team file called it in every call of the plan and launched no
kernel at all (numpy did the work; 100x on ``softmax``, unflagged). The core counts a
call only from a frame of the hook's own code, and names any other caller in its last
frame, which the verdict reads (``no_kernel_launch``)."""

from __future__ import annotations

from pathlib import Path

from redteam_corpus import TRITON, scale_job

from aka.eval._pipeline import run_job

# Walks out of its own frame to the harness's and tells the core a kernel launched,
# answering with torch; ``launch`` off: the same walk, with the kernel launched.
FORGER = """
import torch
import triton
import triton.language as tl

LAUNCH = {launch}


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + 1, mask=mask)


def _core():
    try:
        raise ZeroDivisionError
    except ZeroDivisionError as e:
        f = e.__traceback__.tb_frame
    while f is not None:
        core = f.f_locals.get("core")
        if core is not None and hasattr(core, "launched"):
            return core
        f = f.f_back
    return None


def scale(x):
    core = _core()
    if not LAUNCH and core is not None:
        core.launched()
        return x * 2 + 1
    y = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y
"""


def _evidence(tmp_path: Path, launch: bool) -> list[str]:
    job, root = scale_job(tmp_path, FORGER.format(launch=launch), fixture=TRITON, time=False)
    v = run_job(job, root)
    assert v.compiled["ok"], v.compiled
    return [e for e in v.evidence if "launch counter" in e]


def test_a_launch_reported_by_candidate_code_is_named_as_forged(tmp_path: Path) -> None:
    found = _evidence(tmp_path, launch=False)
    assert len(found) == 1 and "called from kernel.py" in found[0], found


def test_a_kernel_that_launches_is_not_named(tmp_path: Path) -> None:
    """The control: the same walk through the frames, every call launching its kernel."""
    assert _evidence(tmp_path, launch=True) == []
