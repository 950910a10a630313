"""KernelBench problems become tasks that validate, run through the evaluator, and forbid the original."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from aka import events as ev
from aka.eval import EvalRequest, evaluate, load_file_module
from aka.heldout import baseline_task
from aka.importers import read_problem
from aka.kinds import baseline_tree
from aka.orchestrator import harness_digest
from aka.tasks import load_task
from aka.validate import default_timing, validate_task
from aka_ledger import Ledger

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KB = FIXTURES / "kernelbench"


@pytest.fixture
def imported(tmp_path: Path, cli) -> Path:
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "kernelbench", str(KB), "--root", str(root))
    assert res.code == 0, res.err
    assert "-> torch2triton/kernelbench/7_scaled_tanh_sum: tuning" in res.out
    assert "12_linear_gelu_solution.py" in res.err and "ModelNew" in res.err  # a solution, skipped
    return root


def test_spec_records_origin_sizes_and_forbidden(imported: Path) -> None:
    folder = imported / "torch2triton" / "kernelbench" / "12_linear_gelu"
    task = load_task(folder, root=imported)
    spec = task.spec
    assert re.search(r"12_linear_gelu\.py @ [0-9a-f]{40}$", spec.origin)  # path and commit
    assert spec.shapes.tuning == [{"batch": 128, "in_features": 1024, "out_features": 512}]
    assert spec.shapes.heldout and spec.shapes.heldout[0] != spec.shapes.tuning[0]
    assert spec.shapes.cpu and "cpu" in spec.devices  # the derived CPU shapes ran
    assert "torch.nn.functional.gelu" in spec.forbidden and "problem.Model" in spec.forbidden
    assert (folder / "problem.py").read_text() == (KB / "12_linear_gelu.py").read_text()
    assert "class ModelNew(nn.Module)" in (folder / "source" / "model_new.py").read_text()


def test_imported_tasks_pass_quick_validation(imported: Path, tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        for folder in sorted((imported / "torch2triton" / "kernelbench").iterdir()):
            res = validate_task(led, folder, root=imported, device="cpu", run_id="v", quick=True)
            assert res.ok, [c for c in res.checks if c.status == "fail"]


def test_baseline_passes_and_calling_the_original_model_is_flagged(
    imported: Path, tmp_path: Path
) -> None:
    folder = imported / "torch2triton" / "kernelbench" / "7_scaled_tanh_sum"
    task = load_task(folder, root=imported)
    cheat = tmp_path / "cheat"
    cheat.mkdir()
    (cheat / "model_new.py").write_text(
        (folder / "source" / "model_new.py").read_text()
        + "\n\nclass ModelNew(_problem.Model):\n    pass\n"
    )
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:

        def run(t: object, tree: str) -> ev.Scored:
            req = EvalRequest(
                task=t, task_tree=led.cas.snapshot(folder), candidate=tree,  # type: ignore[arg-type]
                harness=harness_digest(led), device="cpu", policy="agentkernelarena",
                timing=default_timing("cpu"), purpose="validate", time=False,
            )  # fmt: skip
            return evaluate(led, "kb", None, req)

        base = run(baseline_task(task), baseline_tree(led.cas, task))
        assert base.compiled and base.correct, base.error
        flagged = run(task, led.cas.snapshot(cheat))
        assert not flagged.correct and "problem.Model" in (flagged.error or "")


def test_missing_get_inputs_names_file_field_and_fix(tmp_path: Path, cli) -> None:
    bad = FIXTURES / "kernelbench_broken" / "no_get_inputs.py"
    res = cli("tasks", "import", "kernelbench", str(bad), "--root", str(tmp_path))
    assert res.code == 2
    assert str(bad) in res.err and "'get_inputs'" in res.err and "fix:" in res.err
    assert "Traceback" not in res.err


def test_syntax_error_names_the_line(tmp_path: Path) -> None:
    from aka.errors import InputError

    with pytest.raises(InputError, match=r"syntax_error\.txt:3"):
        read_problem(FIXTURES / "kernelbench_broken" / "syntax_error.txt")


def test_folder_of_broken_files_imports_nothing(tmp_path: Path, cli) -> None:
    res = cli(
        "tasks",
        "import",
        "kernelbench",
        str(FIXTURES / "kernelbench_broken"),
        "--root",
        str(tmp_path),
    )
    assert res.code == 2 and "nothing was imported" in res.err
    assert "no_get_inputs.py" in res.err


# Level 4's shape: a Hugging Face model named at module level, its config fetched as the
# file is read; here a name no cache holds.
HUB_PROBLEM = """import torch
from transformers import AutoConfig

class Model(torch.nn.Module):
    def __init__(self, model_name, config):
        super().__init__()
        self.proj = torch.nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x):
        return self.proj(x)

model_name = "aka-tests/no-such-model"
config = AutoConfig.from_pretrained(model_name)
batch_size = 4

def get_inputs():
    return [torch.rand(batch_size, config.hidden_size)]

def get_init_inputs():
    return [model_name, config]
"""
MISSING_PACKAGE = """import torch
import aka_tests_no_such_package.ops as ops

class Model(torch.nn.Module):
    def forward(self, x):
        return ops.scale(x)

batch_size = 16

def get_inputs():
    return [torch.rand(batch_size, 8)]

def get_init_inputs():
    return []
"""


def test_problems_that_need_the_network_or_a_package_say_which(tmp_path: Path, cli) -> None:
    """Read offline, a file that fetches its model is refused at once (not after the hub's
    time-outs) with a fix about the local cache; a missing package names the install."""
    pytest.importorskip("transformers")
    folder = tmp_path / "level4"
    folder.mkdir()
    (folder / "1_hub_model.py").write_text(HUB_PROBLEM)
    (folder / "2_missing_package.py").write_text(MISSING_PACKAGE)
    res = cli("tasks", "import", "kernelbench", str(folder), "--root", str(tmp_path / "t"))
    assert res.code == 2 and "0 imported, 0 imported GPU-only, 2 refused" in res.out
    hub, pkg = sorted(re.split(r"(?m)^refused ", res.err)[1:])  # a reason may span lines
    assert "1_hub_model.py" in hub and "the local cache" in hub and "huggingface-cli" in hub
    assert "2_missing_package.py" in pkg
    assert "pip install aka_tests_no_such_package" in pkg


def test_existing_folder_needs_force(imported: Path, cli) -> None:
    again = cli(
        "tasks", "import", "kernelbench", str(KB / "7_scaled_tanh_sum.py"), "--root", str(imported)
    )
    assert again.code == 2 and "--force" in again.err
    forced = cli(
        "tasks", "import", "kernelbench", str(KB / "7_scaled_tanh_sum.py"),
        "--root", str(imported), "--type", "torch2cuda", "--force",
    )  # fmt: skip
    assert forced.code == 0, forced.err
    spec = yaml.safe_load(
        (imported / "torch2cuda/kernelbench/7_scaled_tanh_sum/task.yaml").read_text()
    )
    assert spec["backend"] == "cuda" and spec["devices"] == ["cuda"]


def test_inputs_are_drawn_on_the_evaluation_device(imported: Path) -> None:
    """Upstream get_inputs() calls torch.rand(...) on the CPU; at upstream sizes that is
    gigabytes per call, so the factories must run on the device the evaluation uses."""
    import importlib.util

    import torch

    task = next(p.parent for p in sorted(imported.rglob("task.yaml")))
    spec = importlib.util.spec_from_file_location("kb_ref_device", task / "reference.py")
    assert spec and spec.loader
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    shape = yaml.safe_load((task / "task.yaml").read_text())["shapes"]["tuning"][0]
    seen: list[str] = []
    real = ref.load_problem

    def spying(shape: dict[str, int], path: object = None) -> object:
        problem = real(shape, path)
        inner = problem.get_inputs
        problem.get_inputs = lambda: (seen.append(torch.empty(0).device.type), inner())[1]
        return problem

    ref.load_problem = spying
    # On the meta device nothing is allocated, whatever the upstream sizes.
    inputs = ref.make_inputs(shape, torch.float32, "meta", 1)
    assert seen == ["meta"]
    assert all(x.device.type == "meta" for x in inputs if isinstance(x, torch.Tensor))
    again = ref.make_inputs(yaml.safe_load((task / "task.yaml").read_text())["shapes"]["cpu"][0],
                            torch.float32, "cpu", 1)  # fmt: skip
    assert all(x.device.type == "cpu" for x in again if isinstance(x, torch.Tensor))


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
