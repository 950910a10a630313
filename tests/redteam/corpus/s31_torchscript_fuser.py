# ruff: noqa
# mypy: ignore-errors
"""Softmax by the forbidden ``exp`` itself, fused by TorchScript's NNC fuser.

Task: triton2triton/llm/softmax (bundled). Expected: ``forbidden_api`` (or
``torch_compile``: a compiler wrote the kernel).

``s06_torchscript`` is caught because a scripted function runs its operators through the
dispatcher, where the core records them. With the TensorExpr fuser switched on for the
CPU (three ``torch._C._jit_*`` calls, none an assignment), the profiling executor
compiles ``(x - max).exp()`` into a fused kernel (``fused_sub_exp``) after its first
runs: no ``aten::exp`` reaches RecordFunction, and dynamo's counters, which the
``torch_compile`` check reads, never move (on a GPU the same fuser writes CUDA code). The
source is compiled from a string (no forbidden name in the file) and warmed at import for
every dtype under a dynamic-shape strategy, so no call of the plan runs it unfused; the
max, sum and division left outside the fused group are not forbidden. A Triton copy
moves the answer into the output.
"""
import torch
import triton
import triton.language as tl

torch._C._jit_override_can_fuse_on_cpu(True)
torch._C._jit_set_texpr_fuser_enabled(True)
torch._C._jit_set_te_must_use_llvm_cpu(False)
torch._C._jit_override_can_fuse_on_gpu(True)
torch.jit.set_fusion_strategy([("DYNAMIC", 64)])
_cu = torch.jit.CompilationUnit(
    "def f(x):\n"
    "    xf = x.float()\n"
    "    m = xf.max(dim=-1, keepdim=True)[0]\n"
    "    e = (xf - m).e" "xp()\n"
    "    return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)\n"
)
_dev = "cuda" if torch.cuda.is_available() else "cpu"
for _dt in (torch.float32, torch.float16, torch.bfloat16):
    for _m, _n in ((4, 96), (3, 200), (7, 33), (2, 9)):
        _x = torch.randn(_m, _n, device=_dev).to(_dt)
        for _ in range(3):
            _cu.f(_x)


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def softmax(x):
    tmp = _cu.f(x)
    y = torch.empty_like(x)
    n = y.numel()
    _copy[(triton.cdiv(n, 1024),)](tmp, y, n, BLOCK=1024)
    return y
