"""The inputs of a later call cannot be drawn ahead from the seed of an earlier one.

A candidate can often learn the seed of the inputs it was handed: a task's ``make_inputs``
that seeds torch's global generator and leaves it seeded answers ``torch.initial_seed()``;
for any task, a search over its 2^31 values against the inputs finds it, given the time.
Were the seeds of later calls a step from it, the candidate would draw every later round's
inputs itself, answer them in a call nobody times, and serve its timed calls from a table
of correct answers to inputs that look fresh. So each case's seed is a hash of the
evaluation's (``aka.eval._plan.case_seed``) and each timed round's a keyed draw of the
sealed core's (``draw_seed``): knowing one tells nothing of the next.

The candidates here read the seed the cheap way, from a generator the draw left seeded in
their process: the draws run there (``drawer=False``), as on a GPU. On the CPU the input
drawer draws in a process of its own (:mod:`aka.eval._drawer`), and only the search over
the values is left to a candidate.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from redteam_corpus import scale_job

from aka.eval._pipeline import run_job
from aka.eval._plan import case_seed, make_plan

# The fixture's make_inputs, as many hand-written tasks draw: torch's global generator,
# seeded and left so.
GLOBAL_SEED = """import torch


def make_inputs(shape, dtype, device, seed):
    torch.manual_seed(seed)
    x = torch.randn(shape["N"]) * 3 + 1
    return (x.to(dtype=dtype, device=device),)


def reference(x):
    return x.double() * 2 + 1
"""

# Right in every call; it raises the moment the seed of its inputs is the next step of a
# progression in the seeds it saw before, as one that had drawn those inputs ahead would
# be served from its table.
PREDICTOR = """import torch

_seeds = []  # the distinct seeds of the inputs handed so far, in order


def scale(x):
    seed = torch.initial_seed()
    if not _seeds or _seeds[-1] != seed:
        if len(_seeds) >= 2 and seed - _seeds[-1] == _seeds[-1] - _seeds[-2]:
            raise RuntimeError(f"seed {seed} was drawn ahead")
        _seeds.append(seed)
    return x * 2 + 1
"""

POOL_OFF = {"target_rel_ci": 0.05, "max_time_s": 0.3, "min_samples": 20}


@pytest.mark.parametrize("seeds", [1, 4])
def test_no_call_s_seed_follows_from_the_seeds_before_it(tmp_path: Path, seeds: int) -> None:
    # one seed: a case's twin calls, then the timed rounds (the core's seeds); four: the
    # checked cases' seeds already (the plan's)
    job, root = scale_job(tmp_path, PREDICTOR, seeds=seeds, timing=POOL_OFF, drawer=False)
    (root / "task" / "reference.py").write_text(GLOBAL_SEED)
    v = run_job(job, root)
    assert v.correct and not v.flags, (v.flags, v.error)
    assert v.timing, "the candidate was not timed"


def test_the_task_s_seed_is_what_the_candidate_read(tmp_path: Path) -> None:
    # the control: the seed the candidate reads is its inputs' own (so the test above
    # watches real seeds), and the same evaluation seed gives the same cases
    seen = """import torch


def scale(x):
    assert torch.initial_seed() in SEEDS, torch.initial_seed()
    return x * 2 + 1
"""
    job, root = scale_job(tmp_path, "", seeds=3, time=False, drawer=False)
    cases = {c.seed for c in make_plan(job.shapes, job.dtypes, seed=job.seed, seeds=3,
                                       time=False, timing={}).calls}  # fmt: skip
    (root / "cand" / "kernel.py").write_text(f"SEEDS = {sorted(cases)!r}\n" + seen)
    (root / "task" / "reference.py").write_text(GLOBAL_SEED)
    v = run_job(job, root)
    assert v.correct and not v.flags, (v.flags, v.error)


def test_case_seeds_are_a_hash_not_a_progression() -> None:
    seeds = [case_seed(11, "case", 0, "float32", k) for k in range(64)]
    assert all(0 <= s < 2**31 for s in seeds)
    steps = {b - a for a, b in itertools.pairwise(seeds)}
    assert len(steps) == len(seeds) - 1  # no two steps alike
    assert case_seed(11, "case", 0, "float32", 0) == seeds[0]  # reproducible from the seed
    assert case_seed(12, "case", 0, "float32", 0) != seeds[0]
