# ruff: noqa
# mypy: ignore-errors
"""Softmax compiled by inductor without dynamo, its generated ``call`` invoked raw.

Task: triton2triton/llm/softmax (bundled). Expected: ``native_code`` (inductor loads its C++
kernel from a folder the candidate can write, which is mounted noexec).

``s17_dynamo_counters_reset`` is now caught by the plumbing-only operator rule: the
``torch.compile`` wrapper opens a ``Torch-Compiled Region`` record, which is charged like
an operator. That record, and the ``## Call CompiledFxGraph ##`` and AOT wrapper records,
belong to the wrappers, not to the compiled code: the graph is traced at import by
``make_fx`` (symbolic shapes, inductor's decompositions), compiled by
``compile_fx_inner`` (one compile thread, so no worker processes stay), and the
generated module's ``call`` is taken and called directly. It reaches no RecordFunction
at all (inductor's C++ kernel for the CPU), works at every shape, and dynamo's counters,
the only thing the ``torch_compile`` check reads, are cleared after the import. A Triton
copy moves the answer into the output.
"""
import torch
import torch._dynamo.utils as _du
import triton
import triton.language as tl
from torch._guards import TracingContext, tracing
from torch._inductor.compile_fx import compile_fx_inner
from torch._inductor.decomposition import select_decomp_table
from torch.fx.experimental.proxy_tensor import make_fx

_sm = getattr(torch, "soft" + "max")


def _ref(x):
    return (_sm(x.float(), dim=-1).to(x.dtype),)


def _build(dtype):
    x = torch.randn(4, 96, dtype=dtype)
    gm = make_fx(_ref, decomposition_table=select_decomp_table(), tracing_mode="symbolic")(x)
    vals = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    with tracing(TracingContext(vals[0].fake_mode)):
        return compile_fx_inner(gm, vals).current_callable


with torch._inductor.config.patch(compile_threads=1):
    _raw = {dt: _build(dt) for dt in (torch.float32, torch.float16, torch.bfloat16)}
_du.counters.clear()


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def softmax(x):
    (tmp,) = _raw[x.dtype]([x])
    y = torch.empty_like(x)
    n = x.numel()
    _copy[(triton.cdiv(n, 1024),)](tmp, y, n, BLOCK=1024)
    return y
