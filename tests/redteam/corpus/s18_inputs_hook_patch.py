# ruff: noqa
# mypy: ignore-errors
"""The answer computed while the evaluator draws the inputs, through a patched torch function.

Task: triton2triton/llm/softmax (bundled). Expected: caught (wrong answers or a flag).

``s15_inputs_mode`` is stopped by the core setting aside the torch-function and dispatch
modes the candidate left entered while ``make_inputs`` runs. But ``make_inputs`` is Python
that looks ``torch.where`` up in the torch module at every call, and the module's dict is
the candidate's to write (``torch.__dict__[...] = ...``: no attribute assignment for the
static scan, no audit event, not among the watched functions). The wrapper sees the last
tensor ``make_inputs`` builds (the input itself in float32; its cast in float16), computes
the softmax right there (outside any candidate call: no operator recorded, no clock
running) and keeps it under the values' fingerprint (two elements, read through a view). The
"kernel" is a Triton copy of it: right in every checked and timed call, and as fast as a
copy (on a GPU it refuses CUDA-graph capture, whose
replays would copy a stale answer, so its pairs are timed eagerly).
"""
import torch
import triton
import triton.language as tl

_kept = {}
_where = torch.where
_sm = getattr(torch, "soft" + "max")
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _key(t):
    f = t.reshape(-1)
    ends = f.as_strided((2,), (max(f.numel() - 1, 1),))  # first and last: a view
    return (tuple(t.shape), t.dtype, *ends.tolist())  # one sync


def _hooked(*args, **kwargs):
    out = _where(*args, **kwargs)
    if isinstance(out, torch.Tensor) and out.dim() == 2 and out.is_floating_point():
        # make_inputs' last where is the input (float32) before its cast: the answer for
        # every dtype it may be cast to, in float32 (cheap: drawing the inputs stays fast).
        for dt in _DTYPES:
            x = out.to(dt)
            _kept[_key(x)] = _sm(x.float(), dim=-1).to(dt)
        while len(_kept) > 64:  # timed calls of slow-to-draw inputs reuse eight sets
            _kept.pop(next(iter(_kept)))
    return out


torch.__dict__["where"] = _hooked


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def softmax(x):
    if x.is_cuda and torch.cuda.is_current_stream_capturing():
        # A graph would replay the copy of this answer on later inputs: refuse the
        # capture, and the pair is timed eagerly.
        raise RuntimeError("not capturable")
    k = _key(x)
    ans = _kept.pop(k, None)
    if ans is None:
        ans = torch.zeros_like(x)
    else:
        _kept[k] = ans  # most recently used last: the eight reused sets stay kept
    y = torch.empty_like(x)
    n = x.numel()
    _copy[(triton.cdiv(n, 4096),)](ans, y, n, BLOCK=4096)
    return y
