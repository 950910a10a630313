# ruff: noqa
# mypy: ignore-errors
"""Softmax written by torch.compile at import, dynamo's counters cleared afterwards.

Task: triton2triton/llm/softmax (bundled). Expected: ``forbidden_api`` (since the
plumbing-only operator rule, commit 53989c4: the ``Torch-Compiled Region`` record that
``torch.compile``'s wrapper opens is charged); before it, correct with no flag.

``s16_torch_compile`` is caught by reading dynamo's counters after the import and after the
plan. Those counters are a plain dict of Counters in the candidate's process:
``torch._dynamo.utils.counters.clear()`` after warming every dtype (and again after each
call) leaves nothing to read. Inductor's C++ kernel runs no ATen operator, so the
forbidden softmax is never recorded; a Triton copy kernel moves the answer into the output
so the launch checks see a kernel that matters.
"""
import torch
import torch._dynamo.utils as _du
import triton
import triton.language as tl

_name = "soft" + "max"


def _ref(x):
    return getattr(torch, _name)(x.float(), dim=-1).to(x.dtype)


_compiled = torch.compile(_ref, dynamic=True)
_dev = "cuda" if torch.cuda.is_available() else "cpu"
with torch._inductor.config.patch(compile_threads=1):  # no compile workers left running
    for _dt in (torch.float32, torch.float16, torch.bfloat16):
        for _m, _n in ((4, 96), (3, 200), (1, 257), (5, 131), (64, 4096)):
            _compiled(torch.randn(_m, _n, dtype=_dt, device=_dev))
_du.counters.clear()


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def softmax(x):
    tmp = _compiled(x)
    y = torch.empty_like(x)
    n = x.numel()
    _copy[(triton.cdiv(n, 4096),)](tmp, y, n, BLOCK=4096)
    _du.counters.clear()
    return y
