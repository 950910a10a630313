"""Which sizes of a KernelBench problem are scaled, and to what: upstream sizes shrunk to the GPU
budget, CPU shapes that keep the output tied to the inputs, window hyperparameters told by
whole words of their names."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aka import events as ev
from aka.tasks import load_task
from aka.validate import validate_task
from aka_ledger import Ledger

RAND_INPUTS = Path(__file__).resolve().parent / "fixtures" / "kernelbench_rand_upstream"
# Upstream level 1's ReLU as its file is written (sizes of 3.2 billion elements per call).
RELU_UPSTREAM = (RAND_INPUTS / "19_ReLU.py").read_text()


def test_upstream_sizes_beyond_the_gpu_budget_are_shrunk_and_said(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Upstream's 4096 x 393216 ReLU moves 3.2 billion elements per call (input and
    output): tuned as written, one evaluation on an H200 did not finish in 75 s."""
    from aka.importers._kb_probe import GPU_ELEMENTS

    problem = tmp_path / "19_ReLU.py"
    problem.write_text(RELU_UPSTREAM)
    res = cli("tasks", "import", "kernelbench", str(problem), "--root", str(tmp_path / "a"))
    assert res.code == 0, res.err
    assert (
        "upstream {'batch_size': 4096, 'dim': 393216}" in res.out and "--upstream-sizes" in res.out
    )
    spec = load_task(tmp_path / "a" / "torch2triton/kernelbench/19_relu", root=tmp_path / "a").spec
    tuning = spec.shapes.tuning[0]
    assert 0 < 2 * tuning["batch_size"] * tuning["dim"] <= GPU_ELEMENTS
    assert spec.shapes.heldout[0] != tuning
    kept = cli("tasks", "import", "kernelbench", str(problem), "--root", str(tmp_path / "b"),
               "--upstream-sizes")  # fmt: skip
    assert kept.code == 0, kept.err
    assert "scaled to at most" not in kept.out
    spec = load_task(tmp_path / "b" / "torch2triton/kernelbench/19_relu", root=tmp_path / "b").spec
    assert spec.shapes.tuning == [{"batch_size": 4096, "dim": 393216}]


RATIO = Path(__file__).resolve().parent / "fixtures" / "kernelbench_ratio_upstream"


def test_cpu_shapes_that_make_the_output_ignore_the_inputs_are_passed_over(
    tmp_path: Path, cli
) -> None:  # type: ignore[no-untyped-def]
    """Shrinking out_features to 512 under a fixed 512 groups leaves groups of one
    feature: GroupNorm then gives zeros and the output is the bias whatever the input.
    The CPU shape keeps two features per group at least, and the import line says which
    shape it passed over."""
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "kernelbench", str(RATIO), "--root", str(root))
    assert res.code == 0, res.err
    assert "where the output does not depend on the inputs" in res.out
    task = load_task(root / "torch2triton/kernelbench/75_gemm_groupnorm_min_biasadd", root=root)
    cpu = task.spec.shapes.cpu[0]
    assert cpu["out_features"] >= 2 * 512
    ledger = Ledger.open(tmp_path / "ledger", registry=ev.REGISTRY)
    out = validate_task(ledger, task.path, root=root, device="cpu", run_id="v", quick=True)
    checks = {c.name: c.status for c in out.checks}
    assert checks["output_depends_on_seed"] == "pass", out.checks
    # A maximum kept as a dimension of one, minus its own mean: zeros at every size. No
    # shape is passed over (none is better), and validation says what is wrong.
    line = next(line for line in res.out.splitlines() if "80_Gemm_Max_Subtract_GELU" in line)
    assert "where the output does not depend" not in line
    zeros = load_task(root / "torch2triton/kernelbench/80_gemm_max_subtract_gelu", root=root)
    out = validate_task(ledger, zeros.path, root=root, device="cpu", run_id="v", quick=True)
    checks = {c.name: c.status for c in out.checks}
    assert checks["output_depends_on_seed"] == "fail" and not out.ok
    detail = next(c.detail for c in out.checks if c.name == "output_depends_on_seed")
    assert "the inputs differ between seeds but the output does not" in detail
    assert "fix: change the problem" in detail  # not "draw every input from its seed"


@pytest.mark.parametrize(
    ("name", "hyperparameter"),
    [
        ("kernel_size", True), ("pool_kernel_size", True), ("maxpool_kernel_size", True),
        ("kernelSize", True), ("ksize", True), ("padding", True), ("output_padding", True),
        ("pad", True), ("stride", True), ("dilation", True), ("groups", True),
        ("num_groups", True), ("window_size", True), ("scale_factor", True),
        ("scaling_factor", True), ("eps", True), ("axis", True), ("pool_size", True),
        ("timesteps", False), ("num_steps", False), ("numSteps", False),
        ("padded_features", False), ("dim1", False), ("K", False), ("batch_size", False),
        ("layer_sizes[1]", False), ("seq_len", False), ("depth", False),
    ],
)  # fmt: skip
def test_window_hyperparameters_are_told_by_whole_name_parts(
    name: str, hyperparameter: bool
) -> None:
    """``eps`` inside ``timesteps`` and ``pad`` inside ``padded_features`` made real
    sizes unscalable: upstream's 32768 x 32768 scan became GPU-only with a fix that did
    not apply. A name is a window hyperparameter by its words (split at ``_`` and at
    capitals), not by its letters."""
    from aka.importers._kb_probe import window_hyperparameter

    assert window_hyperparameter(name) is hyperparameter


# Upstream level 1's scan, with its sizes named as it names them.
SCAN_TIMESTEPS = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)

# Define input dimensions and parameters
batch_size = 32768
timesteps = 32768
input_shape = (timesteps,)
dim = 1

def get_inputs():
    return [torch.rand(batch_size, *input_shape)]

def get_init_inputs():
    return [dim]
"""


def test_sizes_whose_names_contain_a_hyperparameters_letters_are_scaled(  # type: ignore[no-untyped-def]
    tmp_path: Path, cli
) -> None:
    problem = tmp_path / "89_cumsum.py"
    problem.write_text(SCAN_TIMESTEPS)
    root = tmp_path / "t"
    res = cli("tasks", "import", "kernelbench", str(problem), "--root", str(root))
    assert res.code == 0 and "1 imported, 0 imported GPU-only" in res.out, res.out + res.err
    spec = yaml.safe_load((root / "torch2triton/kernelbench/89_cumsum/task.yaml").read_text())
    assert "timesteps" in spec["shapes"]["cpu"][0] and "dim" not in spec["shapes"]["cpu"][0]
