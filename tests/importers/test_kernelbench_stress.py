"""The held-out stress cases of an imported KernelBench task: inputs multiplied, moved, and
(drawn non-negative) multiplied by a negative factor, as far as the problem's own float32
code still meets the tolerance, where numerically unsafe kernels (a softmax without its
max pass, a one-pass variance, a tanh through ``exp(-2x)``) break and honest float32 does
not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from aka.eval import load_file_module
from aka.importers._kb_stress import NEGATED_KEY, SCALED_KEY, SHIFTED_KEY
from aka.tasks import Task, load_task
from aka.tolerance import effective_atol, rms

UNSAFE = Path(__file__).resolve().parent / "fixtures" / "kernelbench_unsafe_range"
BASE = "torch2triton/kernelbench"


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture folder imported once (the probe runs each problem for real)."""
    from aka.importers import import_kernelbench

    tmp = tmp_path_factory.mktemp("stress")
    shutil.copytree(UNSAFE, tmp / "level1")
    root = tmp / "tasks"
    import_kernelbench(tmp / "level1", root)
    return root


def _task(root: Path, name: str) -> Task:
    return load_task(root / BASE / name, root=root)


def _passes(got: torch.Tensor, want: torch.Tensor) -> bool:
    """The imported tasks' float32 rule, as the checker applies it."""
    want = want.double()
    got = got.double()
    if not bool(torch.isfinite(got).all()):
        return False
    bound = effective_atol({"atol": 0.0, "rms_atol": 1e-4}, rms(want)) + 1e-4 * want.abs()
    return bool(((got - want).abs() <= bound).all())


@pytest.mark.parametrize(
    ("name", "factor", "offset", "negated"),
    [
        ("22_tanh", 1000.0, 10.0, -1000.0),
        ("23_softmax", 1000.0, 1000.0, -1000.0),
        ("40_layernorm", 1000.0, 30.0, -1000.0),
        ("90_exp", 10.0, 30.0, None),
        ("91_steepexp", None, None, -1000.0),
    ],
)
def test_inputs_are_stressed_as_far_as_the_problem_s_own_float32_holds(
    imported: Path, name: str, factor: float | None, offset: float | None, negated: float | None
) -> None:
    """A softmax stays right in float32 at any scale and offset; a layer norm at any
    scale, but its float32 mean loses digits as [0, 1) moves away from zero (100 uses
    more than a quarter of the tolerance); a tanh saturates beyond an offset of about 10
    (its output no longer moves with the draw); ``exp`` of a standard normal overflows
    float32 beyond a factor of about 10 (its largest draws near 4.5) or an offset near 80;
    ``exp(80 x)`` is at float32's edge already, so only the negated case holds for it. A
    standard normal has both signs already: it gets no negated case. Each case is the
    first held-out shape again, marked, on the GPU and on the CPU, and the instructions
    say what it does."""
    task = _task(imported, name)
    assert task.spec.name == name
    shapes = task.spec.shapes
    ref = load_file_module(task.path / "reference.py", f"_stress_{name}")
    assert ({0: factor} if factor else {}) == ref.INPUT_STRESS
    assert ({0: offset} if offset else {}) == ref.INPUT_SHIFT
    assert ({0: negated} if negated else {}) == ref.INPUT_NEGATE
    cases = ((SCALED_KEY, factor), (SHIFTED_KEY, offset), (NEGATED_KEY, negated))
    marks = [{key: 1} for key, on in cases if on]
    for held in (shapes.heldout, shapes.cpu_heldout):
        assert held == [held[0], *({**held[0], **m} for m in marks)]
    said = [f"input 0 {how} {v:g}" for how, v in (("multiplied by", factor), ("plus", offset),
                                                   ("multiplied by", negated)) if v]  # fmt: skip
    ending = "(one case)" if len(said) == 1 else "(a case each)"
    assert f"{'; '.join(said)} {ending}" in task.spec.instructions
    assert "numerically stable" in task.spec.instructions
    plain, *moved = shapes.cpu_heldout
    (x,) = ref.make_inputs(plain, torch.float32, "cpu", 5)
    for shape, value in zip(moved, (v for _, v in cases if v), strict=True):
        (y,) = ref.make_inputs(shape, torch.float32, "cpu", 5)
        want = x + value if shape.get(SHIFTED_KEY) else x * value
        assert torch.equal(y, want), shape  # the same draw, moved


def test_a_softmax_without_its_max_pass_fails_the_stress_case_the_baseline_meets_it(
    imported: Path,
) -> None:
    """On upstream's [0, 1) inputs exp never overflows, so the unsafe formula meets the
    tolerance on every shape the agent is shown; on the stress case it returns NaN. The
    problem's own float32 code (the starting ModelNew) meets it on every seed."""
    task = _task(imported, "23_softmax")
    ref = load_file_module(task.path / "reference.py", "_stress_softmax_ref")
    plain, stressed, *_ = task.spec.shapes.cpu_heldout

    def unsafe(x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x)
        return e / e.sum(dim=1, keepdim=True)

    for seed in range(3):
        for shape, unsafe_passes in (
            (task.spec.shapes.cpu[0], True),
            (plain, True),
            (stressed, False),
        ):
            (x,) = ref.make_inputs(shape, torch.float32, "cpu", seed)
            want = ref.reference(x, **shape)
            assert _passes(unsafe(x), want) is unsafe_passes, (shape, seed)
            assert _passes(torch.softmax(x, dim=1), want), (shape, seed)


UNSAFE_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=float("-inf"))
        total += tl.exp(x)
    s = tl.sum(total, axis=0)
    for start in range(0, n, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=float("-inf"))
        tl.store(y_ptr + row * n + offs, tl.exp(x) / s, mask=offs < n)


def _softmax(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=256)
    return y
"""


def test_a_trainer_s_reward_for_the_unsafe_kernel_is_incorrect_and_says_no_more(
    imported: Path, tmp_path: Path
) -> None:
    """Through the trainer's scorer (a scored evaluation): the Triton softmax without its
    max pass is correct on every tuning case, fails the stress case, and the policy is
    told only that a held-out check failed."""
    from aka.api import Evaluator, Sample
    from aka.integrations._scorer import LocalScorer

    start = (_task(imported, "23_softmax").path / "source" / "model_new.py").read_text()
    head, sep, tail = start.partition("\nfrom kb_loader import")
    source = head + UNSAFE_KERNEL + sep + tail.replace("torch.softmax(x, dim=1)", "_softmax(x)")
    assert "_softmax(x)" in source.split("class ModelNew", 1)[1]
    response = f"```python path=model_new.py\n{source}```"
    with Evaluator(tmp_path / "ledger", tasks_root=imported, device="cpu") as ev:
        r = LocalScorer(ev).score(f"{BASE}/23_softmax", response, Sample(trainer="test"))
    assert r.compiled and not r.correct, (r.score, r.error)
    assert SCALED_KEY in (r.error or "") and "NaN or Inf" in (r.error or "")
    assert "held-out shapes: failed (how many" in r.feedback, r.feedback
    assert SCALED_KEY not in r.feedback and "NaN" not in r.feedback


def test_a_one_pass_variance_fails_the_shifted_case_the_two_pass_one_meets_it(
    imported: Path,
) -> None:
    """``E[x^2] - E[x]^2`` in float32 meets the tolerance on upstream's [0, 1) inputs and
    cancels catastrophically on the shifted case; torch's own layer norm (the starting
    code) meets it on every seed."""
    task = _task(imported, "40_layernorm")
    ref = load_file_module(task.path / "reference.py", "_stress_layernorm_ref")
    plain, _, shifted, _ = task.spec.shapes.cpu_heldout
    shape = task.spec.shapes.cpu[0]
    dims = (shape["features"], shape["dim1"], shape["dim2"])

    def one_pass(x: torch.Tensor) -> torch.Tensor:
        axes = (1, 2, 3)
        mean = x.mean(dim=axes, keepdim=True)
        var = (x * x).mean(dim=axes, keepdim=True) - mean * mean
        return (x - mean) / torch.sqrt(var.clamp_min(0) + 1e-5)

    for seed in range(3):
        for at, one_pass_passes in ((shape, True), (plain, True), (shifted, False)):
            (x,) = ref.make_inputs(at, torch.float32, "cpu", seed)
            want = ref.reference(x, **at)
            assert _passes(one_pass(x), want) is one_pass_passes, (at, seed)
            sizes = (at["features"], at["dim1"], at["dim2"]) if at is not shape else dims
            assert _passes(torch.nn.functional.layer_norm(x, sizes), want), (at, seed)


def test_a_tanh_through_exp_of_minus_2x_fails_only_the_negated_case(imported: Path) -> None:
    """``(1 - e^-2x) / (1 + e^-2x)`` is right for every non-negative input, so it meets
    upstream's [0, 1) draws and the scaled case; ``e^-2x`` overflows for inputs below about
    -44, and the negated case returns NaN from it. torch's own tanh meets every case."""
    task = _task(imported, "22_tanh")
    ref = load_file_module(task.path / "reference.py", "_stress_tanh_ref")
    plain, stressed, shifted, negated = task.spec.shapes.cpu_heldout
    assert negated.get(NEGATED_KEY) == 1

    def unsafe(x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(-2.0 * x)
        return (1.0 - e) / (1.0 + e)

    for seed in range(3):
        for at, unsafe_passes in (
            (task.spec.shapes.cpu[0], True),
            (plain, True),
            (stressed, True),
            (shifted, True),
            (negated, False),
        ):
            (x,) = ref.make_inputs(at, torch.float32, "cpu", seed)
            want = ref.reference(x, **at)
            assert _passes(unsafe(x), want) is unsafe_passes, (at, seed)
            assert _passes(torch.tanh(x), want), (at, seed)
