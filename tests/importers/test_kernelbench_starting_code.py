"""What an imported KernelBench candidate starts from and may not call: the starting code keeps
the values its code reads, and the torch functions of the forwards and of the modules Model
holds are forbidden."""

from __future__ import annotations

from pathlib import Path

from aka import events as ev
from aka.eval import EvalRequest, evaluate
from aka.importers import read_problem
from aka.orchestrator import harness_digest
from aka.tasks import load_task
from aka.validate import default_timing, validate_task
from aka_ledger import Ledger

# Upstream level 2's shape: the layers are built in __init__ and called in forward, whose
# source then names no torch function but logsumexp.
MODULES_IN_INIT = """import torch
import torch.nn as nn

class Model(nn.Module):
    \"\"\"
    Model that performs a convolution, applies Group Normalization, Tanh, HardSwish,
    Residual Addition, and LogSumExp.
    \"\"\"
    def __init__(self, in_channels, out_channels, kernel_size, groups, eps=1e-5):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(groups, out_channels, eps=eps)
        self.tanh = nn.Tanh()
        self.hard_swish = nn.Hardswish()

    def forward(self, x):
        # Convolution
        x_conv = self.conv(x)
        # Group Normalization
        x_norm = self.group_norm(x_conv)
        # Tanh
        x_tanh = self.tanh(x_norm)
        # HardSwish
        x_hard_swish = self.hard_swish(x_tanh)
        # Residual Addition
        x_res = x_conv + x_hard_swish
        # LogSumExp
        x_logsumexp = torch.logsumexp(x_res, dim=1, keepdim=True)
        return x_logsumexp

batch_size = 128
in_channels = 8
out_channels = 64
height, width = 128, 128
kernel_size = 3
groups = 16

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups]
"""


def test_the_modules_model_builds_are_forbidden_and_the_starting_code_is_flagged(
    tmp_path: Path, cli
) -> None:  # type: ignore[no-untyped-def]
    """Forbidding only what forward's source names left ``self.conv(x)`` and
    ``self.group_norm(x)`` legal: the starting code, unchanged, was a correct answer. The
    modules the Model instance holds forbid the functions computing the same (whose
    operators the evaluator records however they are called); the module classes stay
    allowed, for the parameters a candidate keeps."""
    from aka.eval import forbidden_uses

    problem = tmp_path / "92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp.py"
    problem.write_text(MODULES_IN_INIT)
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "kernelbench", str(problem), "--root", str(root))
    assert res.code == 0, res.err
    folder = (
        root
        / "torch2triton/kernelbench"
        / "92_conv2d_groupnorm_tanh_hardswish_residualadd_logsumexp"
    )
    task = load_task(folder, root=root)
    for name in ("torch.nn.functional.conv2d", "torch.convolution",
                 "torch.nn.functional.group_norm", "torch.tanh",
                 "torch.nn.functional.hardswish", "torch.logsumexp", "problem.Model"):  # fmt: skip
        assert name in task.spec.forbidden, (name, task.spec.forbidden)
    assert "torch.nn.Conv2d" not in task.spec.forbidden
    starting = (folder / "source" / "model_new.py").read_text()
    found = forbidden_uses("model_new.py", starting, task.spec.forbidden)
    assert [f.detail for f in found] == ["uses torch.logsumexp"]  # nn.Conv2d is kept
    spelled = starting.replace("self.group_norm(x_conv)",
                               "F.group_norm(x_conv, self.group_norm.num_groups, "
                               "self.group_norm.weight, self.group_norm.bias)")  # fmt: skip
    spelled = spelled.replace(
        "import torch.nn as nn", "import torch.nn as nn\nimport torch.nn.functional as F"
    )
    assert any("torch.nn.functional.group_norm" in f.detail
               for f in forbidden_uses("model_new.py", spelled, task.spec.forbidden))  # fmt: skip

    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        checked = validate_task(led, folder, root=root, device="cpu", run_id="v", quick=True)
        statuses = {c.name: c.status for c in checked.checks}
        assert statuses["forbidden_resolve"] == "pass" and statuses["null_reference_call"] == "pass"
        assert checked.ok, [c for c in checked.checks if c.status == "fail"]
        cand = tmp_path / "cand"
        cand.mkdir()
        (cand / "model_new.py").write_text(starting)
        req = EvalRequest(
            task=task, task_tree=led.cas.snapshot(folder), candidate=led.cas.snapshot(cand),
            harness=harness_digest(led), device="cpu", policy="agentkernelarena",
            timing=default_timing("cpu"), purpose="validate", time=False,
        )  # fmt: skip
        scored = evaluate(led, "kb", None, req)
    assert not scored.correct and "forbidden_api" in scored.hack_flags, scored.evidence
    ran = " ".join(scored.evidence)
    assert "aten::convolution" in ran and "aten::native_group_norm" in ran, scored.evidence


# Level 3's MiniGPT block: the computation sits in the forwards of the file's own modules.
HELPER_MODULES = """import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.n_head = n_head

    def forward(self, x):
        q, k, v = self.c_attn(x).split(x.size(-1), dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        return F.softmax(att, dim=-1) @ v

class Model(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.act = NewGELU()

    def forward(self, x):
        return self.act(self.attn(x))

batch_size = 128
seq_len = 512
n_embd = 768
n_head = 8

def get_inputs():
    return [torch.rand(batch_size, seq_len, n_embd)]

def get_init_inputs():
    return [n_embd, n_head]
"""


def test_the_forwards_of_the_files_own_modules_are_read_too(tmp_path: Path) -> None:
    path = tmp_path / "44_MiniGPTBlock.py"
    path.write_text(HELPER_MODULES)
    calls = read_problem(path).forward_calls
    assert {"torch.tanh", "torch.pow", "torch.nn.functional.softmax"} <= set(calls), calls


ENV_SIZES = """import os
import pytest
import torch
import torch.nn as nn

SCALE = 0.5
OFFSET = SCALE * 2


def helper(x):
    return x * OFFSET


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return helper(torch.nn.functional.gelu(self.linear(x)))


batch_size = int(os.environ.get("KB_BATCH", 512))
n_out = 2048


def get_inputs():
    return [torch.rand(batch_size, 1024)]


def get_init_inputs():
    return [1024, n_out]
"""


def test_the_starting_code_keeps_the_values_its_code_reads_and_not_the_input_sizes(
    tmp_path: Path,
) -> None:
    """Module-level values only get_inputs() and get_init_inputs() read stay in problem.py:
    copied into the starting code (the candidate's, judged by its rules), a size read from
    the environment failed the baseline with env_access. Values the helpers read, and the
    values those are computed from, are kept."""
    path = tmp_path / "4_EnvSizes.py"
    path.write_text(ENV_SIZES)
    body = read_problem(path).body
    assert "os.environ" not in body and "batch_size" not in body and "n_out" not in body
    assert "SCALE = 0.5" in body and "OFFSET = SCALE * 2" in body and "def helper" in body
    assert "class ModelNew" in body
