"""KernelBench problems as they are found beside upstream: its prompt examples, forks and
datasets built from it place tensors on CUDA by hand, seed their own inputs, draw them
with numpy, build models that meta cannot, and read sizes from the environment."""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

from aka import events as ev
from aka.eval import load_file_module
from aka.importers import read_problem
from aka.validate import validate_task
from aka_ledger import Ledger

# Shapes of files found beside upstream KernelBench (its prompt examples, forks, datasets
# built from it): inputs placed on CUDA by hand, get_inputs() that seeds itself, inputs
# drawn with numpy, Windows line endings.
CUDA_PLACED = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.bias = nn.Parameter(torch.randn(N).cuda())

    def forward(self, a, b):
        scale = torch.ones(1, device="cuda")
        return torch.relu(a + self.bias) * scale + b.to("cuda")


M = 4096
N = 2048


def get_inputs():
    a = torch.randn(M, N).cuda()
    b = torch.randn(M, N, device="cuda")
    return [a, b]


def get_init_inputs():
    return []
"""

SELF_SEEDED = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
    def forward(self, x, mask):
        return torch.where(mask, x, torch.zeros_like(x)).sum(dim=self.dim)

batch_size = 64
seq_len = 4096
hidden = 256
dim = 1

def get_inputs():
    torch.manual_seed(42)
    x = torch.randn(batch_size, seq_len, hidden)
    mask = torch.rand(batch_size, seq_len, hidden) > 0.5
    return [x, mask]

def get_init_inputs():
    return [dim]
""".replace("\n", "\r\n")

NUMPY_DRAWN = """import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, idx):
        return x[idx].cumsum(dim=0)


n_rows = 4096
n_cols = 512


def get_inputs():
    x = torch.from_numpy(np.random.randn(n_rows, n_cols).astype(np.float32))
    idx = torch.from_numpy(np.random.permutation(n_rows))
    return [x, idx]


def get_init_inputs():
    return []
"""


def test_problems_that_place_on_cuda_or_seed_themselves_import_with_inputs_the_seed_decides(  # type: ignore[no-untyped-def]
    tmp_path: Path, cli
) -> None:
    """``.cuda()`` and ``device="cuda"`` land on the evaluation's device (here the CPU,
    where they used to refuse the file: "Torch not compiled with CUDA"); a get_inputs()
    that calls ``torch.manual_seed(42)`` or draws with numpy still gets inputs that the
    evaluator's seed decides: the same for one seed, new for another (otherwise every
    call's inputs are the same, and a kernel could answer them from a cache)."""
    folder = tmp_path / "level1"
    folder.mkdir()
    for name, text in [("1_cuda_placed.py", CUDA_PLACED), ("2_self_seeded.py", SELF_SEEDED),
                       ("3_numpy_drawn.py", NUMPY_DRAWN)]:  # fmt: skip
        (folder / name).write_bytes(text.encode())
    root = tmp_path / "t"
    res = cli("tasks", "import", "kernelbench", str(folder), "--root", str(root))
    assert "3 imported, 0 imported GPU-only, 0 refused" in res.out, res.out + res.err
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        for name in ("1_cuda_placed", "2_self_seeded", "3_numpy_drawn"):
            task = root / "torch2triton/kernelbench" / name
            spec = yaml.safe_load((task / "task.yaml").read_text())
            assert spec["devices"] == ["cuda", "cpu"], name
            ref = load_file_module(task / "reference.py", f"kb_ref_{name}")
            shape = spec["shapes"]["cpu"][0]
            one, same, other = (ref.make_inputs(shape, torch.float32, "cpu", s) for s in (1, 1, 2))
            assert all(x.device.type == "cpu" for x in one), name
            assert all(torch.equal(x, y) for x, y in zip(one, same, strict=True)), name
            assert not torch.equal(one[0], other[0]), name
            out = ref.reference(*one, **shape)
            assert out.device.type == "cpu" and out.dtype == torch.float64, name
            # The first through the evaluator too: its Model's size N is a module-level
            # value, which the baseline's copy of the file (timed beside the candidate)
            # must get at the shape's size as well (it was built at the file's own N).
            quick = name != "1_cuda_placed"
            checked = validate_task(led, task, root=root, device="cpu", run_id="v", quick=quick)
            assert checked.ok, (name, [c for c in checked.checks if c.status == "fail"])
    # numpy's and torch's generators are given back as they were
    import numpy as np

    np.random.seed(7)
    torch.manual_seed(7)
    before = (np.random.rand(), torch.rand(1))
    np.random.seed(7)
    torch.manual_seed(7)
    ref.make_inputs(shape, torch.float32, "cpu", 3)
    assert (np.random.rand(), torch.rand(1)) == before


# Swin-like: __init__ reads values (drop-path rates through .item(), which meta cannot
# give) and the forward accepts only the image size the model was built for.
FIXED_IMAGE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, img_size=64, dim=32, depth=4, drop_path_rate=0.1):
        super().__init__()
        self.img_size = img_size
        rates = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]
        self.embed = nn.Conv2d(3, dim, 8, stride=8)
        self.blocks = nn.ModuleList(nn.Linear(dim, dim) for _ in rates)

    def forward(self, x):
        B, C, H, W = x.shape
        assert H == self.img_size and W == self.img_size, \\
            f"Input image size ({H}*{W}) doesn't match model ({self.img_size}*{self.img_size})."
        x = self.embed(x).flatten(2).transpose(1, 2)
        for block in self.blocks:
            x = x + block(x)
        return x.mean(1)


batch_size = 10
image_size = 64


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return []
"""


def test_a_model_that_reads_values_in_init_is_still_checked_on_meta(  # type: ignore[no-untyped-def]
    tmp_path: Path, cli
) -> None:
    """Its __init__ cannot run on meta, so no shape used to be checked there and the image
    size was scaled into held-out and CPU shapes the model refuses. Built on the CPU and
    moved to meta, the forward checks each shape: only the batch is scaled."""
    folder = tmp_path / "level3"
    folder.mkdir()
    (folder / "29_SwinLike.py").write_text(FIXED_IMAGE)
    root = tmp_path / "t"
    res = cli("tasks", "import", "kernelbench", str(folder), "--root", str(root))
    assert res.code == 0 and "1 imported" in res.out, res.out + res.err
    spec = yaml.safe_load((root / "torch2triton/kernelbench/29_swinlike/task.yaml").read_text())
    shapes = [s for kind in spec["shapes"].values() for s in kind]
    assert len(shapes) >= 2 and all(s.get("image_size", 64) == 64 for s in shapes), shapes
    assert spec["shapes"]["heldout"][0] != spec["shapes"]["tuning"][0]


ENV_SIZES = """import os
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
