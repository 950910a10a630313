"""What an imported KernelBench reference draws and runs: inputs a copy would answer widened,
recurrent states in float64 (a random forward refused), half precision said to become float32."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import torch
import yaml

from aka import events as ev
from aka.eval import load_file_module
from aka.tasks import load_task
from aka.validate import validate_task
from aka_ledger import Ledger

RAND_INPUTS = Path(__file__).resolve().parent / "fixtures" / "kernelbench_rand_upstream"


def test_inputs_that_make_a_copy_correct_are_widened_and_said(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Upstream draws these inputs with ``torch.rand``: on [0, 1) ReLU and HardTanh
    return their input, so a copy is a correct answer. The import draws ReLU's from
    [-1, 1) and HardTanh's (a clamp to [-1, 1]) from [-4, 4), says so in its line and in
    the instructions, and the tasks then tell a kernel from a copy. A BatchNorm with fresh
    statistics is a copy whatever its input: it is left as written, for validation to
    report."""
    level = tmp_path / "level1"
    shutil.copytree(RAND_INPUTS, level)
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "kernelbench", str(level), "--root", str(root))
    assert res.code == 0, res.err
    lines = {line.split(" -> ")[0].rsplit("/", 1)[-1]: line for line in res.out.splitlines()}
    assert "input 0 from [-1, 1)" in lines["19_ReLU.py"]
    assert "input 0 from [-4, 4)" in lines["32_HardTanh.py"]
    assert "torch.rand" not in lines["33_BatchNorm.py"]
    base = root / "torch2triton/kernelbench"
    ranges = {"19_relu": (-1, 1), "32_hardtanh": (-4, 4)}
    for name, (low, high) in ranges.items():
        task = load_task(base / name, root=root)
        assert f"Unlike upstream, it draws get_inputs()'s input 0 from [{low}, {high})" in (
            task.spec.instructions
        )
        ref = load_file_module(task.path / "reference.py", f"_widened_{name}_ref")
        (x,) = ref.make_inputs(task.spec.shapes.cpu[0], torch.float32, "cpu", 0)
        assert low <= float(x.min()) < low / 2 and high / 2 < float(x.max()) <= high
    norm = load_task(base / "33_batchnorm", root=root)
    assert "Unlike upstream" not in norm.spec.instructions
    assert "INPUT_RANGES = {}" in (norm.path / "reference.py").read_text()

    ledger = Ledger.open(tmp_path / "ledger", registry=ev.REGISTRY)
    checks = {}
    for name in (*ranges, "33_batchnorm"):
        out = validate_task(ledger, base / name, root=root, device="cpu", run_id="v", quick=True)
        checks[name] = {c.name: c.status for c in out.checks}
    assert checks["19_relu"]["null_input_copy"] == "pass"
    assert checks["32_hardtanh"]["null_input_copy"] == "pass"
    assert checks["33_batchnorm"]["null_input_copy"] == "fail"


# Upstream level-3 recurrent models keep their initial state two ways: drawn once in
# __init__ as a plain attribute (Module.double() does not cast it), or drawn in forward on
# every call without a dtype (float32 beside the float64 reference's inputs, and random).
GRU_STATE_IN_INIT = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=2):
        super(Model, self).__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, batch_first=False)
        self.h0 = torch.randn((num_layers, batch_size, hidden_size))

    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        output, h_n = self.gru(x, self.h0)
        zeros = torch.zeros(h_n.shape[-1], device=x.device)  # made in forward, no dtype
        return h_n + zeros

# Test code (upstream's sizes shrunk: 512 steps, 6 layers of 256)
batch_size = 10
seq_len = 16
input_size = 32
hidden_size = 32
num_layers = 2

def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size)]

def get_init_inputs():
    return [input_size, hidden_size, num_layers]
"""

LSTM_STATE_IN_FORWARD = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size):
        super(Model, self).__init__()
        self.hidden_size, self.num_layers = hidden_size, num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x, h0=None, c0=None):
        batch_size = x.size(0)
        if h0 is None:
            h0 = torch.randn(self.num_layers, batch_size, self.hidden_size, device=x.device)
        if c0 is None:
            c0 = torch.randn(self.num_layers, batch_size, self.hidden_size, device=x.device)
        out, _ = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :])

# === Test configuration === (upstream's sizes shrunk: 512 steps, 6 layers of 256)
batch_size = 10
sequence_length = 16
input_size = 32
hidden_size = 32
num_layers = 2
output_size = 10

def get_inputs():
    return [torch.rand(batch_size, sequence_length, input_size)]

def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size]
"""


def test_recurrent_states_run_in_float64_and_a_random_forward_is_refused(  # type: ignore[no-untyped-def]
    tmp_path: Path, cli
) -> None:
    folder = tmp_path / "level3"
    folder.mkdir()
    (folder / "39_GRU.py").write_text(GRU_STATE_IN_INIT)
    (folder / "35_LSTM.py").write_text(LSTM_STATE_IN_FORWARD)
    root = tmp_path / "t"
    res = cli("tasks", "import", "kernelbench", str(folder), "--root", str(root))
    assert "1 imported, 0 imported GPU-only, 1 refused" in res.out, res.out + res.err
    (lstm,) = re.split(r"(?m)^refused ", res.err)[1:]
    assert "35_LSTM.py" in lstm and "forward draws random numbers" in lstm
    assert "get_inputs()" in lstm  # the fix: draw them there and pass them in
    task = root / "torch2triton/kernelbench/39_gru"
    spec = yaml.safe_load((task / "task.yaml").read_text())
    assert spec["devices"] == ["cuda", "cpu"]
    ref = load_file_module(task / "reference.py", "kb_ref_gru")
    shape = spec["shapes"]["cpu"][0]
    inputs = ref.make_inputs(shape, torch.float32, "cpu", 1)
    out = ref.reference(*inputs, **shape)
    assert out.dtype == torch.float64 and torch.isfinite(out).all()
    assert torch.get_default_dtype() == torch.float32  # given back after the forward
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        checked = validate_task(led, task, root=root, device="cpu", run_id="v", quick=True)
    assert checked.ok, [c for c in checked.checks if c.status == "fail"]


# Upstream level 1's square matmul, its inputs drawn in half precision as forks write it.
HALF_MATMUL = """import torch
import torch.nn as nn

class Model(nn.Module):
    \"\"\"
    Simple model that performs a single square matrix multiplication (C = A * B)
    \"\"\"
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)

N = 2048 * 2

def get_inputs():
    A = torch.rand(N, N, dtype=torch.float16)
    B = torch.rand(N, N, dtype=torch.float16)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed
"""


def test_half_precision_inputs_are_said_to_become_float32(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """The task checks float32 (its inputs cast, the reference in float64): a problem
    written for float16 became a float32 task without a word."""
    problem = tmp_path / "1_half_matmul.py"
    problem.write_text(HALF_MATMUL)
    root = tmp_path / "t"
    res = cli("tasks", "import", "kernelbench", str(problem), "--root", str(root))
    assert res.code == 0, res.err
    assert "float16 inputs" in res.out and "float32" in res.out, res.out
    spec = yaml.safe_load((root / "torch2triton/kernelbench/1_half_matmul/task.yaml").read_text())
    assert spec["dtypes"] == ["float32"] and "float16" in spec["instructions"]
