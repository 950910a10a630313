"""KernelBench problems as they are found beside upstream: its prompt examples, forks and
datasets built from it place tensors on CUDA or the CPU by hand, seed their own inputs, draw
them with numpy, build models that meta cannot, and are saved in other encodings."""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

from aka import events as ev
from aka.eval import load_file_module
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
import pytest
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


# Upstream level 1's sum reduction, as its file is written.
SUM_REDUCTION = """import torch
import torch.nn as nn

class Model(nn.Module):
    \"\"\"
    Simple model that performs sum reduction over a specified dimension.
    \"\"\"
    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)

batch_size = 128
dim1 = 4096
dim2 = 4095
reduce_dim = 1

def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]

def get_init_inputs():
    return [reduce_dim]
"""


def test_files_saved_in_other_encodings_are_read_as_python_reads_them(  # type: ignore[no-untyped-def]
    tmp_path: Path, cli
) -> None:
    """A UTF-8 BOM (Windows editors) and a Latin-1 file that declares its encoding run
    under Python, so they import; a Latin-1 comment without the declaration does not
    run under Python: it gets one refused line, and the files after it still import
    (it used to stop the folder with a UnicodeDecodeError traceback). Copies a notebook
    left in ``.ipynb_checkpoints`` are not problems of the folder."""
    folder = tmp_path / "level1"
    (folder / ".ipynb_checkpoints").mkdir(parents=True)
    (folder / "__pycache__").mkdir()
    latin = "# somme réduite (problème copié)\n" + SUM_REDUCTION
    (folder / "1_latin1.py").write_bytes(latin.encode("latin-1"))
    declared = "# -*- coding: latin-1 -*-\n" + latin.replace(
        "self.dim = dim", "self.dim = dim\n        self.label = 'réduite'"
    )
    (folder / "2_declared.py").write_bytes(declared.encode("latin-1"))
    (folder / "3_bom.py").write_bytes(b"\xef\xbb\xbf" + SUM_REDUCTION.encode())
    (folder / ".ipynb_checkpoints" / "3_bom-checkpoint.py").write_text(SUM_REDUCTION)
    (folder / "__pycache__" / "3_bom.py").write_text(SUM_REDUCTION)
    root = tmp_path / "t"
    res = cli("tasks", "import", "kernelbench", str(folder), "--root", str(root))
    assert "2 imported, 0 imported GPU-only, 1 refused" in res.out, res.out + res.err
    assert "Traceback" not in res.err and "checkpoint" not in res.out + res.err
    (refused,) = [line for line in res.err.splitlines() if line.startswith("refused")]
    assert "1_latin1.py" in refused and "not UTF-8" in refused and "coding" in refused
    base = root / "torch2triton/kernelbench"
    assert sorted(p.name for p in base.iterdir()) == ["2_declared", "3_bom"]
    assert (base / "2_declared" / "problem.py").read_bytes() == declared.encode("latin-1")
    # The starting code is UTF-8 (no declaration), with the file's text as Python read it.
    assert "self.label = 'réduite'" in (base / "2_declared/source/model_new.py").read_text()
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        for name in ("2_declared", "3_bom"):
            checked = validate_task(
                led, base / name, root=root, device="cpu", run_id="v", quick=True
            )
            assert checked.ok, (name, [c for c in checked.checks if c.status == "fail"])


def test_windows_line_endings_tabs_and_a_script_block_import_as_python_reads_them(  # type: ignore[no-untyped-def]
    tmp_path: Path, cli
) -> None:
    """Problem files as people keep them: saved on Windows (CRLF), indented with tabs, and
    ending in a ``__main__`` block that tries the model (here one that fails if it runs:
    importing must never run a file as a script). Each imports with the sizes of the
    plain file and passes the quick checks."""
    import re

    folder = tmp_path / "level1"
    folder.mkdir()
    (folder / "1_crlf.py").write_bytes(SUM_REDUCTION.replace("\n", "\r\n").encode())
    tabs = re.sub(r"^(    )+", lambda m: "\t" * (len(m.group(0)) // 4), SUM_REDUCTION, flags=re.M)
    assert "\t" in tabs
    (folder / "2_tabs.py").write_text(tabs)
    script = SUM_REDUCTION + (
        '\n\nif __name__ == "__main__":\n'
        '    raise SystemExit("the problem file was run as a script")\n'
    )
    (folder / "3_script.py").write_text(script)
    (folder / "4_plain.py").write_text(SUM_REDUCTION)
    root = tmp_path / "t"
    res = cli("tasks", "import", "kernelbench", str(folder), "--root", str(root))
    assert "4 imported, 0 imported GPU-only, 0 refused" in res.out, res.out + res.err
    base = root / "torch2triton/kernelbench"
    specs = {p.name: yaml.safe_load((p / "task.yaml").read_text()) for p in base.iterdir()}
    assert specs.keys() == {"1_crlf", "2_tabs", "3_script", "4_plain"}
    for name, spec in specs.items():
        assert spec["shapes"] == specs["4_plain"]["shapes"], name
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        for name in ("1_crlf", "2_tabs", "3_script"):
            checked = validate_task(
                led, base / name, root=root, device="cpu", run_id="v", quick=True
            )
            assert checked.ok, (name, [c for c in checked.checks if c.status == "fail"])


def test_a_folder_without_problems_and_inputs_that_are_not_a_list_say_so(  # type: ignore[no-untyped-def]
    tmp_path: Path, cli
) -> None:
    """An empty folder said "see the refused files above" with nothing above; a
    get_inputs() returning a dict was refused with a message about sizes. A get_inputs()
    written as a generator is a list of what it yields: it used to be consumed once for
    the shapes and run empty."""
    empty = tmp_path / "empty"
    empty.mkdir()
    res = cli("tasks", "import", "kernelbench", str(empty), "--root", str(tmp_path / "t"))
    assert res.code == 2 and "no .py files" in res.err and "refused files above" not in res.err
    folder = tmp_path / "level1"
    folder.mkdir()
    as_dict = SUM_REDUCTION.replace("return [x]", 'return {"x": x}')
    (folder / "1_dict_inputs.py").write_text(as_dict)
    generator = SUM_REDUCTION.replace(
        "    x = torch.rand(batch_size, dim1, dim2)\n    return [x]",
        "    yield torch.rand(batch_size, dim1, dim2)",
    )
    (folder / "2_generator_inputs.py").write_text(generator)
    root = tmp_path / "t"
    res = cli("tasks", "import", "kernelbench", str(folder), "--root", str(root))
    assert "1 imported, 0 imported GPU-only, 1 refused" in res.out, res.out + res.err
    (refused,) = [line for line in res.err.splitlines() if line.startswith("refused")]
    assert "1_dict_inputs.py" in refused and "get_inputs() returned a dict" in refused
    assert "a list of the forward's inputs" in refused
    task = root / "torch2triton/kernelbench/2_generator_inputs"
    spec = yaml.safe_load((task / "task.yaml").read_text())
    assert spec["devices"] == ["cuda", "cpu"], spec
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        checked = validate_task(led, task, root=root, device="cpu", run_id="v", quick=True)
        assert checked.ok, [c for c in checked.checks if c.status == "fail"]


def test_cpu_placements_land_where_the_task_runs_and_unrunnable_files_say_why(  # type: ignore[no-untyped-def]
    tmp_path: Path, cli
) -> None:
    """Inputs placed on the CPU by hand (``device="cpu"``, ``.to("cpu")``, the
    ``"cuda" if torch.cuda.is_available() else "cpu"`` idiom, a ``device='cpu'`` default)
    were drawn for real at upstream sizes while the file was read, and refused as out of
    memory; they land on the evaluation's device as CUDA placements do. A forward
    returning a tuple imported, and every validation then failed on ``.detach()``; a
    helper module beside the problem was refused with "pip install" it."""
    folder = tmp_path / "level1"
    folder.mkdir()
    body = SUM_REDUCTION.replace("    x = torch.rand(batch_size, dim1, dim2)\n", "{draw}")
    for name, draw in [
        ("1_device_kw", '    x = torch.rand(batch_size, dim1, dim2, device="cpu")\n'),
        ("2_to_cpu", '    x = torch.rand(batch_size, dim1, dim2).to("cpu").cpu()\n'),
        ("3_device_idiom", "    device = torch.device('cuda' if torch.cuda.is_available() "
                           "else 'cpu')\n    x = torch.rand(batch_size, dim1, dim2, device=device)\n"),
    ]:  # fmt: skip
        (folder / f"{name}.py").write_text(body.replace("{draw}", draw))
    (folder / "4_default_arg.py").write_text(
        SUM_REDUCTION.replace("def get_inputs():", "def get_inputs(device='cpu'):").replace(
            "torch.rand(batch_size, dim1, dim2)",
            "torch.rand(batch_size, dim1, dim2, device=device)",
        )
    )
    (folder / "5_tuple_output.py").write_text(
        SUM_REDUCTION.replace(
            "return torch.sum(x, dim=self.dim, keepdim=True)",
            "return torch.sum(x, dim=self.dim, keepdim=True), torch.amax(x, dim=self.dim)",
        )
    )
    (folder / "kb_helpers.py").write_text(
        "import torch\n\ndef scaled_sum(x, dim):\n    return torch.sum(x, dim=dim, keepdim=True) * 0.5\n"
    )
    (folder / "6_sibling_import.py").write_text(
        SUM_REDUCTION.replace("import torch.nn as nn\n", "import torch.nn as nn\nfrom kb_helpers import scaled_sum\n")
        .replace("torch.sum(x, dim=self.dim, keepdim=True)", "scaled_sum(x, self.dim)")
    )  # fmt: skip
    root = tmp_path / "t"
    res = cli("tasks", "import", "kernelbench", str(folder), "--root", str(root))
    assert "4 imported, 0 imported GPU-only, 3 refused" in res.out, res.out + res.err
    refused = {line.split(":")[0].rsplit("/", 1)[-1]: line for line in res.err.splitlines()
               if line.startswith("refused")}  # fmt: skip
    assert "forward returns several outputs (tuple)" in refused["5_tuple_output.py"]
    assert "return one tensor" in refused["5_tuple_output.py"]
    helper = refused["6_sibling_import.py"]
    assert "kb_helpers.py" in helper and "inline" in helper and "pip install" not in helper
    assert "kb_helpers.py" in refused  # a helper module is no problem of its own
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        for name in ("1_device_kw", "2_to_cpu", "3_device_idiom", "4_default_arg"):
            task = root / "torch2triton/kernelbench" / name
            spec = yaml.safe_load((task / "task.yaml").read_text())
            assert spec["shapes"]["tuning"] != [{"batch_size": 128, "dim1": 4096, "dim2": 4095}]
            ref = load_file_module(task / "reference.py", f"kb_ref_{name}")
            (x,) = ref.make_inputs(spec["shapes"]["cpu"][0], torch.float32, "meta", 0)
            assert x.device.type == "meta", name  # drawn where the evaluation runs
            checked = validate_task(led, task, root=root, device="cpu", run_id="v", quick=True)
            assert checked.ok, (name, [c for c in checked.checks if c.status == "fail"])
