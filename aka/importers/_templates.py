"""File templates the importers and ``aka tasks new`` write (plain strings, ``str.format``)."""

from __future__ import annotations

_LOADER_BODY = '''import ast
import hashlib
import sys
import types
from pathlib import Path

PROBLEM = Path(__file__).resolve().parent / "problem.py"
_PROBLEMS = {}


def _assigned(stmt):
    """Module-level names a statement binds (chained and tuple targets included)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _override(namespace, names, shape):
    for key, value in shape.items():
        base, _, index = key.partition("[")
        if base not in names:
            continue
        if not index:
            namespace[base] = value
        else:  # one element of a list or tuple of sizes, e.g. layer_sizes[1]
            items = list(namespace[base])
            items[int(index.rstrip("]"))] = value
            namespace[base] = type(namespace[base])(items)


def load_problem(shape, path=None):
    """The problem module run with ``shape``'s sizes (cached per shape)."""
    path = Path(path or PROBLEM)
    key = (str(path), tuple(sorted(shape.items())))
    if key in _PROBLEMS:
        return _PROBLEMS[key]
    digest = hashlib.blake2s(repr(key).encode(), digest_size=8).hexdigest()
    module = types.ModuleType("_aka_kb_" + digest)
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # classes defined in it find their module
    assigned = set()
    # Bytes: parsed as Python reads a file (a BOM, a declared encoding such as latin-1).
    for stmt in ast.parse(path.read_bytes(), filename=str(path)).body:
        code = compile(ast.Module(body=[stmt], type_ignores=[]), str(path), "exec")
        exec(code, vars(module))
        names = _assigned(stmt)
        _override(vars(module), names, shape)
        assigned |= names
    module.__aka_assigned__ = sorted(assigned)
    _PROBLEMS[key] = module
    return module


def float64_model(model):
    """``model`` in float64, with the tensors it keeps as plain attributes (an initial
    state drawn in __init__, ``self.h0 = torch.randn(...)``): Module.double() casts only
    parameters and buffers, and a float32 state beside float64 inputs fails the forward."""
    import torch

    model = model.double()
    for module in model.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                setattr(module, name, value.double())
    return model


def forward64(model, args):
    """``model(*args)`` with float64 as torch's default dtype, so that tensors the forward
    creates without a dtype (``torch.zeros(n, device=x.device)``) match its inputs."""
    import torch

    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            return model(*args)
    finally:
        torch.set_default_dtype(before)


def placed(device):
    """A context in which the problem's own placements on CUDA or the CPU (``.cuda()``,
    ``.cpu()``, ``device="cuda"``, ``device="cpu"``, ``.to("cuda")``, the ``"cuda" if
    torch.cuda.is_available() else "cpu"`` idiom) land on ``device`` instead: files in
    the wild write them, and the evaluation's device decides (the CPU, meta while the
    problem is read, one GPU of several). A placement on the CPU counts too: drawn there
    for real while the problem is read, upstream sizes ran out of memory."""
    import torch
    from torch.overrides import TorchFunctionMode

    target = torch.device(device)

    def moved(value):
        if isinstance(value, (str, torch.device)) and torch.device(value).type in ("cuda", "cpu"):
            return target
        return value

    class Placed(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = {k: moved(v) if k == "device" else v for k, v in (kwargs or {}).items()}
            if func is torch.Tensor.cuda or func is torch.Tensor.cpu:
                return args[0].to(target)
            if func is torch.Tensor.to:
                args = tuple(moved(a) for a in args)
            return func(*args, **kwargs)

    return Placed()


class seeded:
    """torch's, numpy's and random's generators seeded from ``seed`` for a call of the
    problem (their states put back after), and the problem's own seeding inside it
    (``torch.manual_seed(42)`` in get_inputs()) folded with ``seed``: otherwise every call
    would get the same inputs, which no seed varies and a kernel could answer from a
    cache of its outputs."""

    def __init__(self, seed):
        self.seed = int(seed)
        self.saved = []

    def _fold(self, real, bits):
        return lambda n=0, *a, **k: real((int(n or 0) * 1000003 + self.seed) % (1 << bits), *a, **k)

    def __enter__(self):
        import random

        import torch

        self.rng = torch.random.fork_rng(devices=[])
        self.rng.__enter__()
        places = [(torch, "manual_seed", 63), (torch.random, "manual_seed", 63),
                  (torch.cuda, "manual_seed", 63), (torch.cuda, "manual_seed_all", 63),
                  (random, "seed", 63)]
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            places.append((numpy.random, "seed", 32))
            self.np_state = numpy.random.get_state()
        self.py_state = random.getstate()
        torch.manual_seed(self.seed)
        random.seed(self.seed)
        if numpy is not None:
            numpy.random.seed(self.seed % (1 << 32))
        for owner, name, bits in places:
            real = getattr(owner, name)
            self.saved.append((owner, name, real))
            setattr(owner, name, self._fold(real, bits))
        return self

    def __exit__(self, *exc):
        import random

        for owner, name, real in reversed(self.saved):
            setattr(owner, name, real)
        self.saved.clear()
        random.setstate(self.py_state)
        numpy = sys.modules.get("numpy")
        if numpy is not None and hasattr(self, "np_state"):
            numpy.random.set_state(self.np_state)
        return self.rng.__exit__(*exc)


def share_values(problem, where):
    """Give the module of ``where`` (a function of it, or the module's name) the
    problem's module-level values at this shape, for the names it defines too (a Model
    that reads batch_size from its module). Through the function, not a lookup in
    sys.modules: the evaluator loads the baseline's copy of the file under a name it
    does not keep there, and that copy would build its model at the file's own sizes."""
    if isinstance(where, str):
        module = sys.modules.get(where)
        namespace = vars(module) if module is not None else {}
    else:
        namespace = where.__globals__
    for name in problem.__aka_assigned__:
        if name in namespace:
            namespace[name] = getattr(problem, name)
'''
KERNELBENCH_LOADER = (
    '''"""Loads the KernelBench problem beside this file with a shape's sizes (not editable).

load_problem(shape) runs problem.py statement by statement; each size in the shape
replaces the file's value where that name is assigned, so values derived from it
(bias_shape = (out_channels, 1, 1)) are computed from the new size.
"""

'''
    + _LOADER_BODY
)
"""``source/kb_loader.py`` of an imported KernelBench task."""

KERNELBENCH_REFERENCE = (
    '''"""Reference for an imported KernelBench problem: its Model, run in float64.

Sizes come from the shape through load_problem (values derived from them recomputed);
inputs come from the problem's get_inputs() under the trial's seed, those in
INPUT_RANGES mapped from [0, 1) to [low, high), and in held-out shapes marked
aka_stressed, aka_negated or aka_shifted those in INPUT_STRESS or INPUT_NEGATE multiplied
or those in INPUT_SHIFT moved (see the task's instructions); weights from a fixed seed.
"""

'''
    + _LOADER_BODY
    + """
import torch

WEIGHT_SEED = 0
INPUT_RANGES = {}
INPUT_STRESS = {}
INPUT_NEGATE = {}
INPUT_SHIFT = {}
_MODELS = {}


def _cast(x, dtype, device):
    if isinstance(x, torch.Tensor):
        return x.to(device=device, dtype=dtype) if x.is_floating_point() else x.to(device)
    return x


def make_inputs(shape, dtype, device, seed):
    # Factory calls in get_inputs() run on the evaluation device: upstream sizes are
    # gigabytes, too slow to draw on the CPU and copy over for every call.
    problem = load_problem(shape)
    with seeded(seed), torch.device(device), placed(device):
        inputs = list(problem.get_inputs())
    for i, (low, high) in INPUT_RANGES.items():
        inputs[i] = low + (high - low) * inputs[i]
    for key, factors in (("aka_stressed", INPUT_STRESS), ("aka_negated", INPUT_NEGATE)):
        if shape.get(key):
            for i, factor in factors.items():
                inputs[i] = inputs[i] * factor
    if shape.get("aka_shifted"):
        for i, offset in INPUT_SHIFT.items():
            inputs[i] = inputs[i] + offset
    return tuple(_cast(x, dtype, device) for x in inputs)


def reference(*inputs, **shape):
    problem = load_problem(shape)
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), "cpu")
    key = (tuple(sorted(shape.items())), str(device))
    model = _MODELS.get(key)
    if model is None:
        with seeded(WEIGHT_SEED), placed("cpu"):
            model = problem.Model(*problem.get_init_inputs())
        model = _MODELS.setdefault(key, float64_model(model).to(device).eval())
    args = [_cast(x, torch.float64, device) for x in inputs]
    with placed(device):
        return forward64(model, args)
"""
)

KERNELBENCH_ENTRY = '''"""{kind} task from the KernelBench problem {name}: make ModelNew fast with {backend} kernels.

ModelNew starts as a copy of the problem's Model (with the helpers and module-level
values it uses). Rewrite its forward (and __init__ if you need to) with your own
{backend} kernels; keep the parameters Model creates, in the same order, because the
weights come from seeding the constructor. Sizes and init inputs come from problem.py
(not editable), run with the shape's sizes by kb_loader. kernelbench_entry is how the
evaluator calls the model: leave it as it is.
"""

{imports}
import problem as _problem
from kb_loader import load_problem, placed, seeded, share_values

{body}


WEIGHT_SEED = 0
_MODELS = {{}}


def kernelbench_entry(*inputs, **shape):
    """Build ModelNew once per shape, device and dtype (seeded like the reference), run it."""
    problem = load_problem(shape)
    share_values(problem, kernelbench_entry)
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    device = tensors[0].device if tensors else torch.device("cpu")
    dtype = next((x.dtype for x in tensors if x.is_floating_point()), torch.float32)
    key = (tuple(sorted(shape.items())), str(device), dtype)
    model = _MODELS.get(key)
    if model is None:
        with seeded(WEIGHT_SEED), placed("cpu"):
            model = ModelNew(*problem.get_init_inputs())
        model = _MODELS.setdefault(key, model.to(device=device, dtype=dtype).eval())
    if device.type == "cuda":  # the model's own .cuda() calls are right as they are
        with torch.no_grad():
            return model(*inputs)
    with torch.no_grad(), placed(device):
        return model(*inputs)
'''

SCAFFOLD_REFERENCE = '''"""Reference for {name}: out = x * sigmoid(x) * scale, per row (scale has one value per column).

Replace the op with yours; keep make_inputs varied (not only standard normal) so null
answers and precision downgrades fail, and compute the reference in float64.
"""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        x = torch.randn(shape["M"], shape["N"], generator=g) * 3 + 0.5
        scale = torch.rand(shape["N"], generator=g) * 2 + 0.25
        return x.to(dtype=dtype), scale.to(dtype=dtype)


def reference(x, scale):
    x64 = x.double()
    return x64 * torch.sigmoid(x64) * scale.double()
'''

SCAFFOLD_TORCH = '''"""{name}, written in PyTorch: the starting point to rewrite as a {backend} kernel."""

import torch


def silu_scale(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.sigmoid(xf) * scale.float()).to(x.dtype)
'''

SCAFFOLD_TRITON = '''"""{name}: a Triton kernel for out = x * sigmoid(x) * scale (the starting point)."""

import torch
import triton
import triton.language as tl

BLOCK = 512


@triton.jit
def silu_scale_kernel(x_ptr, s_ptr, out_ptr, n_cols, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    s = tl.load(s_ptr + offs % n_cols, mask=mask).to(tl.float32)
    y = x / (1.0 + tl.exp(-x)) * s
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def silu_scale(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    silu_scale_kernel[(triton.cdiv(n, BLOCK),)](x, scale.contiguous(), out, x.shape[-1], n, BLOCK=BLOCK)
    return out
'''

SCAFFOLD_CUDA_PY = '''"""{name}: builds kernel.cu with torch's extension loader and calls its launcher."""

import hashlib
import tempfile
from pathlib import Path

import torch

THREADS = 256

_HERE = Path(__file__).resolve().parent
_CPP = "void silu_scale_raw(int64_t x, int64_t s, int64_t y, int64_t n, int64_t cols, int64_t threads);"
_ext = None


def _extension():
    global _ext
    if _ext is None:
        from torch.utils.cpp_extension import load_inline

        cu = (_HERE / "kernel.cu").read_text()
        digest = hashlib.sha256((_CPP + cu).encode()).hexdigest()[:16]
        build = Path(tempfile.gettempdir()) / f"aka_cuda_{name}_{{digest}}"
        build.mkdir(parents=True, exist_ok=True)
        _ext = load_inline(
            name=f"aka_{name}_{{digest}}",
            cpp_sources=[_CPP],
            cuda_sources=[cu],
            functions=["silu_scale_raw"],
            build_directory=str(build),
            extra_cuda_cflags=["-O3"],
        )
    return _ext


def silu_scale(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
{body}
'''

SCAFFOLD_CUDA_BODY_TORCH = """    xf = x.float()
    return (xf * torch.sigmoid(xf) * scale.float()).to(x.dtype)"""

SCAFFOLD_CUDA_BODY_CUDA = """    x, scale = x.contiguous(), scale.contiguous()
    out = torch.empty_like(x)
    _extension().silu_scale_raw(
        x.data_ptr(), scale.data_ptr(), out.data_ptr(), x.numel(), x.shape[-1], THREADS
    )
    return out"""

SCAFFOLD_CU = """// {name}: out = x * sigmoid(x) * scale for float32 x (rows x cols) and scale (cols).
#include <cstdint>
#include <cuda_runtime.h>

__global__ void silu_scale_kernel(const float* x, const float* s, float* y, int64_t n, int64_t cols) {{
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) {{
    float v = x[i];
    y[i] = v / (1.0f + __expf(-v)) * s[i % cols];
  }}
}}

void silu_scale_raw(int64_t x, int64_t s, int64_t y, int64_t n, int64_t cols, int64_t threads) {{
  int64_t blocks = (n + threads - 1) / threads;
  silu_scale_kernel<<<blocks, threads>>>(reinterpret_cast<const float*>(x),
                                         reinterpret_cast<const float*>(s),
                                         reinterpret_cast<float*>(y), n, cols);
}}
"""
