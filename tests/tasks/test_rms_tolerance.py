"""``rms_atol``: an absolute tolerance that follows the scale of the reference output.

A softmax over 24576 columns is about 4e-5 everywhere, so against an absolute atol of
1e-4 a kernel returning zeros is "correct". With ``rms_atol`` the absolute part is a
fraction of the output's root mean square, case by case, in the evaluator's checker and
in the task validator alike.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from aka.config import TimingSettings
from aka.eval import EvalRequest, evaluate
from aka.events import REGISTRY, Scored
from aka.kinds._kernel_checks import downgrade_passes, passes
from aka.tasks import Tolerance, load_task
from aka.tolerance import effective_atol
from aka_ledger import Ledger

TINY = Path(__file__).resolve().parents[1] / "redteam" / "tasks" / "torch" / "ops" / "tiny"
"""Outputs of about 1e-7 (the red-team fixture whose zeros pass an absolute atol)."""
SCALED = "{atol: 0.0, rtol: 1.0e-5, rms_atol: 1.0e-3}"


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.floats(min_value=-1e3, max_value=1e3, allow_nan=False), min_size=1, max_size=16
    ),
    scale=st.floats(min_value=1e-9, max_value=1.0),
    rms_atol=st.floats(min_value=0, max_value=1e-2),
)
def test_the_absolute_part_is_a_fraction_of_the_output_rms(
    values: list[float], scale: float, rms_atol: float
) -> None:
    ref = torch.tensor(values, dtype=torch.float64) * scale
    tol = Tolerance(atol=0.0, rtol=1e-6, rms_atol=rms_atol)
    rms = float(ref.square().mean().sqrt())
    assert tol.atol_at(rms) == effective_atol(tol.model_dump(), rms) == rms_atol * rms
    zeros_pass = passes(torch.zeros_like(ref), ref, tol)
    assert zeros_pass == bool((ref.abs() <= rms_atol * rms + 1e-6 * ref.abs()).all())


def test_scaled_tolerance_catches_what_an_absolute_one_lets_through() -> None:
    """Zeros and a bfloat16 rounding of a softmax-sized output: both pass atol 1e-4,
    both fail rms_atol 1e-4; the exact answer passes both."""
    torch.manual_seed(0)
    ref = torch.softmax(torch.rand(8, 24576, dtype=torch.float64), dim=-1)
    absolute = Tolerance(atol=1e-4, rtol=1e-4)
    scaled = Tolerance(atol=0.0, rtol=1e-4, rms_atol=1e-4)
    assert passes(torch.zeros_like(ref), ref, absolute) and downgrade_passes(ref, absolute)
    assert not passes(torch.zeros_like(ref), ref, scaled) and not downgrade_passes(ref, scaled)
    assert passes(ref.float(), ref, scaled)


def _evaluate(root: Path, source: str, tolerance: str) -> Scored:
    return _evaluate_in(root, TINY, source, tolerance)


def _evaluate_in(root: Path, fixture: Path, source: str, tolerance: str) -> Scored:
    """``source`` as the kernel of a copy of the task at ``fixture`` with ``tolerance``."""
    task_dir = root / "task"
    shutil.copytree(fixture, task_dir)
    spec = task_dir / "task.yaml"
    spec.write_text(spec.read_text().replace("{atol: 1.0e-5, rtol: 1.0e-5}", tolerance))
    ledger = Ledger.open(root / "ledger", registry=REGISTRY)
    task = load_task(task_dir, root=root)
    with tempfile.TemporaryDirectory(prefix="aka-rms-") as tmp:
        (Path(tmp) / "kernel.py").write_text(source)
        candidate = ledger.cas.snapshot(Path(tmp), paths=["kernel.py"])
    req = EvalRequest(
        task=task, task_tree=ledger.cas.snapshot(task.path), candidate=candidate,
        harness="b3:" + "0" * 64, device="cpu", policy="agentkernelarena",
        timing=TimingSettings(max_time_s=0.2, min_samples=5),
    )  # fmt: skip
    return evaluate(ledger, "rms", None, req)


ZEROS = "import torch\n\ndef tiny(x):\n    return torch.zeros_like(x)\n"
HONEST = "def tiny(x):\n    return x * 1e-7\n"
ROUNDED = "import torch\n\ndef tiny(x):\n    return (x * 1e-7).bfloat16().float()\n"


@pytest.mark.parametrize(
    ("source", "tolerance", "correct"),
    [
        (ZEROS, "{atol: 1.0e-5, rtol: 1.0e-5}", False),  # as it is: flagged degenerate
        (ZEROS, SCALED, False),
        (ROUNDED, SCALED, False),
        (HONEST, SCALED, True),
    ],
)
def test_the_checker_applies_the_scaled_tolerance(
    tmp_path: Path, source: str, tolerance: str, correct: bool
) -> None:
    scored = _evaluate(tmp_path, source, tolerance)
    assert scored.correct is correct, scored.error
    flags = set(scored.hack_flags)
    assert ("degenerate_task" in flags) is (tolerance != SCALED)
    if not correct and tolerance == SCALED:
        assert "rms_atol 0.001 x output RMS" in (scored.error or "")


@settings(max_examples=200, deadline=None)
@given(value=st.floats(min_value=1e-6, max_value=1e6), rtol=st.floats(min_value=0, max_value=1e-2))
def test_a_bfloat16_downgrade_of_a_scalar_is_judged_by_the_tolerance_not_by_luck(
    value: float, rtol: float
) -> None:
    """A scalar output (a loss) may lie on or near a bfloat16 value (1.5 is one), so
    rounding it alone passes tight tolerances now and then; the verdict must depend on
    the tolerance only."""
    assume(value != round(value) and abs(rtol - 2.0**-8) > 1e-9)  # integers are exact
    ref = torch.tensor(value, dtype=torch.float64)
    tol = Tolerance(atol=0.0, rtol=rtol)
    assert downgrade_passes(ref, tol) is (rtol > 2.0**-8)


def test_integer_outputs_take_the_scaled_tolerance_too(tmp_path: Path) -> None:
    """Indices and codes are compared like real outputs; their RMS is taken in float64."""
    task_dir = tmp_path / "task"
    shutil.copytree(TINY, task_dir)
    (task_dir / "reference.py").write_text(
        (TINY / "reference.py")
        .read_text()
        .replace("return x.double() * 1e-7", "return x.argsort()")
    )
    exact = "def tiny(x):\n    return x.argsort()\n"
    off = "def tiny(x):\n    return x.argsort().flip(0)\n"
    # The task's own kernel returns the indices too: its output dtype is the contract.
    (task_dir / "source" / "kernel.py").write_text(exact)
    assert _evaluate_in(tmp_path / "a", task_dir, exact, SCALED).correct
    assert not _evaluate_in(tmp_path / "b", task_dir, off, SCALED).correct


def test_repeats_compares_outputs_element_by_element_and_nan_where_nan_was() -> None:
    """One rule for "the same answer twice" (a reference's determinism in the validator,
    a random forward in the KernelBench importer): tuples and lists of tensors compare
    element by element, NaNs match NaNs, last-bit noise passes and a redraw does not."""
    from aka.tolerance import repeats

    g = torch.Generator().manual_seed(0)
    h, c = torch.randn(3, 4, generator=g, dtype=torch.float64), torch.randn(5, generator=g)
    assert repeats((h, [c, 2]), (h.clone(), [c.clone(), 2]))
    assert not repeats((h, c), (h, torch.randn(5, generator=g)))  # a state drawn again
    assert not repeats((h, c), (h,)) and not repeats((h, c), h)
    nan = h.clone()
    nan[0, 0] = float("nan")
    assert repeats(nan, nan.clone()) and not repeats(nan, h)
    assert repeats(h, h + 1e-12 * h.abs().max())  # atomics in the last bits
    assert not repeats(h, h + 1e-3)
