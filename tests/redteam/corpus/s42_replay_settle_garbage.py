# ruff: noqa
# mypy: ignore-errors
"""Cached answers served to the timing pool, and garbage where the suspicion is re-timed.

Task: triton2triton/llm/softmax (bundled). Expected: ``timed_output_wrong`` (the second
timing's audited outputs are checked as the first's are).

It rebinds ``torch.where`` to a Triton select that also runs the candidate's softmax on
every input set ``make_inputs`` draws (no ATen operator in a candidate frame) and keeps
the answers. It serves from that cache only the sets drawn before the latest (the timing
pool's eight), and computes every set just drawn (each correctness call, each fresh
round): the pooled rounds are fast and the fresh ones are not, so the replay check
suspects a cache and times the candidate again in a fresh process. There (no twin calls,
one dtype) it returns uninitialised memory on every call, is not suspected again, and the
lower of the two speedups, the cache's, was kept (4.4-7.6x on the CPU, where an honest
one-pass kernel gets 2.3x; correct, no flag, while nothing checked that process).
"""
import torch
import triton
import triton.language as tl

_kept = {}
_last = [None]
_state = {"n": 0, "mode": None}
_orig_where = torch.where


@triton.jit
def _where_k(c_ptr, a_ptr, b_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(c_ptr + offs, mask=mask, other=0)
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(o_ptr + offs, tl.where(c != 0, a, b), mask=mask)


@triton.jit
def _softmax_k(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=float("-inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def _key(t):
    f = t.reshape(-1)
    k = min(16, f.numel())
    return (tuple(t.shape), t.dtype, tuple(f[:k].cpu().tolist()), tuple(f[-k:].cpu().tolist()))


def _sm(x):
    m, n = x.shape
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _softmax_k[(m,)](x, y, n, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(n))
    return y


def _hook(cond, a, b, *rest, **kw):
    if (rest or kw or not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor)
            or a.shape != b.shape or cond.shape != a.shape or a.dim() != 2 or a.dtype != b.dtype):
        return _orig_where(cond, a, b, *rest, **kw)
    c = cond.to(torch.uint8).contiguous()
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = a.numel()
    _where_k[(triton.cdiv(n, 1024),)](c, a, b, out, n, BLOCK=1024)
    if out.is_floating_point():
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            x = out.to(dt)
            _kept[_key(x)] = _sm(x)
        _last[0] = _key(out.to(torch.float32))
        while len(_kept) > 96:
            _kept.pop(next(iter(_kept)))
    return out


torch.__dict__["where"] = _hook


def _decide(st, dtype, fp):
    """Which process this is. The main process runs the correctness cases first: calls
    1-2 and 3-4 are twins (the same values) and a second dtype follows. A timing-only
    re-timing process (the evaluator's settling run) gives no twins and one dtype."""
    seen = st.setdefault("seen", [])
    if fp is not None:
        seen.append(fp)
    if st["mode"] is None and len(seen) >= 2 and seen[0] != seen[1]:
        st["mode"] = "retime"
    if st["mode"] is None and len(seen) >= 4 and seen[2] != seen[3]:
        st["mode"] = "retime"
    st.setdefault("dtype", dtype)
    if st["mode"] is None and dtype != st["dtype"]:
        st["mode"] = "main"


def softmax(x: torch.Tensor) -> torch.Tensor:
    st = _state
    st["n"] += 1
    key = _key(x)
    _decide(st, x.dtype, key if st["n"] <= 4 else None)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if st["mode"] == "retime":
        return y  # nobody checks this process's outputs
    ans = _kept.get(key)
    just_drawn = _last[0] is not None and key[2:] == _last[0][2:] and x.dtype == torch.float32
    if ans is None or just_drawn or st["mode"] is None:
        m, n = x.shape
        _softmax_k[(m,)](x, y, n, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(n))
        return y
    n = x.numel()
    _copy[(triton.cdiv(n, 1024),)](ans, y, n, BLOCK=1024)
    return y
