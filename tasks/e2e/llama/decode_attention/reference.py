"""Reference for the end-to-end Llama serving tasks: the model's logits in fp32.

Shared verbatim by every task under tasks/e2e/llama/ (a test keeps the copies equal).
The shape dict carries both the fixed workload and the model: ``B`` sequences, either
``S`` prompt tokens (a prefill forward) or ``CTX`` cached tokens (one decode step),
and the model's ``L`` layers, ``D`` hidden size, ``H`` query heads, ``KV`` key/value
heads, ``F`` MLP width and ``V`` vocabulary size.

Inputs are ``(tokens, [k_cache, v_cache,] embed, attn_norm, wqkv, wo, mlp_norm,
w_gate_up, w_down, final_norm, lm_head)``: the weights are one fixed random model per
configuration (a served model does not change between requests), generated once per
process from ``MODEL_SEED`` and shared by every input set, while the prompts and the
decode context come from ``seed``. The output is the logits of each sequence's last
position, shape ``(B, V)``.

The reference is written independently of the model file: explicit attention with a
mask and repeated key/value heads, fp32 everywhere, on the weights as given (so a
bfloat16 model is compared with fp32 arithmetic on its own bfloat16 weights).
"""

import math

import torch

EPS = 1e-6
ROPE_THETA = 10000.0
MODEL_SEED = 20250613
MODEL_KEYS = ("L", "D", "H", "KV", "F", "V")

_master = {}
_cast = {}


def _master_weights(cfg):
    """The model in fp32 on the CPU, generated from MODEL_SEED; one config kept at a time."""
    if cfg not in _master:
        _master.clear()
        n_layers, d, h, kv, f, v = cfg
        hd = d // h
        g = torch.Generator(device="cpu").manual_seed(MODEL_SEED)

        def normal(*size, std):
            return torch.randn(*size, generator=g) * std

        def norm_weight(*size):
            # Never all ones: a kernel that ignores the weight must fail.
            return torch.rand(*size, generator=g) * 0.8 + 0.6

        out_std = 1.0 / math.sqrt(2 * n_layers)  # keeps the residual stream's scale steady
        _master[cfg] = (
            normal(v, d, std=1.0),  # embed
            norm_weight(n_layers, d),  # attn_norm
            normal(n_layers, d, (h + 2 * kv) * hd, std=1.0 / math.sqrt(d)),  # wqkv
            normal(n_layers, h * hd, d, std=out_std / math.sqrt(h * hd)),  # wo
            norm_weight(n_layers, d),  # mlp_norm
            normal(n_layers, d, 2 * f, std=1.0 / math.sqrt(d)),  # w_gate_up (gate, then up)
            normal(n_layers, f, d, std=2.0 * out_std / math.sqrt(f)),  # w_down
            norm_weight(d),  # final_norm
            normal(d, v, std=3.0 / math.sqrt(d)),  # lm_head: logits of a few units
        )
    return _master[cfg]


def _model_weights(shape, dtype, device):
    """The model's weights in ``dtype`` on ``device``; one copy kept (GPU models are GBs)."""
    cfg = tuple(shape[k] for k in MODEL_KEYS)
    key = (cfg, dtype, str(device))
    if key not in _cast:
        _cast.clear()
        _cast[key] = tuple(w.to(device=device, dtype=dtype) for w in _master_weights(cfg))
    return _cast[key]


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    b, v = shape["B"], shape["V"]
    # Zipf-like token ids: frequent tokens dominate as in real text.
    ranks = torch.rand(b, shape.get("S", 1), generator=g).pow(3.0)
    tokens = (ranks * v).long().clamp_(max=v - 1)
    weights = _model_weights(shape, dtype, device)
    if "CTX" not in shape:
        return (tokens.to(device), *weights)
    hd = shape["D"] // shape["H"]
    size = (shape["L"], b, shape["KV"], shape["CTX"], hd)
    # The cached context: keys with a per-head scale (some heads attend sharply), values
    # with an offset so the attention output is never near zero.
    k_scale = torch.exp(torch.randn(shape["L"], 1, shape["KV"], 1, 1, generator=g) * 0.5)
    k_cache = torch.randn(*size, generator=g) * k_scale
    v_cache = torch.randn(*size, generator=g) + 0.5
    _plant_score(k_cache, tokens[:, 0], weights, shape, dtype, g)
    cache = (k_cache.to(device=device, dtype=dtype), v_cache.to(device=device, dtype=dtype))
    return (tokens[:, 0].to(device), *cache, *weights)


def _plant_score(k_cache, tokens, weights, shape, dtype, g):
    """Make one score 110-140 above the rest of its row in a random part of the context.

    In a random eighth of the (sequence, key/value head) pairs (at least one), one query
    head of the group, at layer 0, gets a score 110-140 above its largest other score at a
    random cached key other than the first and the last (any one, with fewer than three;
    the new token's own key is not cached), by moving that key along the query. The range within that row then exceeds
    float32's exp range, so a kernel that skips the max, or shifts the scores by any other
    one (the first, the last, the new token's) or by their mean, overflows; the honest one
    returns about that key's value. Layer 0's queries depend on the token and the weights
    only, so they are computed here as the reference does, on the weights in ``dtype``.
    """
    _, b, kv, ctx, hd = k_cache.shape
    h = shape["H"]
    pairs = torch.randperm(b * kv, generator=g)[: max(1, b * kv // 8)]
    pb, pk = pairs // kv, pairs % kv
    head = pk * (h // kv) + torch.randint(0, h // kv, (pairs.numel(),), generator=g)
    lo, hi = (1, ctx - 1) if ctx >= 3 else (0, ctx)
    cols = torch.randint(lo, hi, (pairs.numel(),), generator=g)
    gap = 110.0 + 30.0 * torch.rand(pairs.numel(), generator=g)
    embed, attn_norm, wqkv = weights[:3]
    device = embed.device
    picked = torch.arange(pb.numel())
    x = _rms_norm(embed[tokens[pb].to(device)].float(), attn_norm[0].float())  # (n, D)
    qk = (x @ wqkv[0][:, : (h + kv) * hd].float()).view(-1, h + kv, 1, hd)
    qk = _rope(qk, torch.tensor([ctx], device=device))[:, :, 0].cpu()
    q, k_new = qk[picked, head], qk[picked, h + pk]  # (n, hd): the planted heads' query and key
    scale = 1.0 / math.sqrt(hd)
    keys = k_cache[0, pb, pk].to(dtype).float()  # (n, CTX, hd), as the kernel reads them
    scores = (keys * q[:, None, :]).sum(-1) * scale
    others = torch.cat([scores, (k_new * q).sum(-1, keepdim=True) * scale], dim=-1)
    others[picked, cols] = float("-inf")  # the new token's own score stays among the others
    lift = others.amax(-1) + gap - scores[picked, cols]
    k_cache[0, pb, pk, cols] += (lift / (q.pow(2).sum(-1) * scale))[:, None] * q


def _rms_norm(x, w):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


def _rope(x, positions):
    """Rotary embedding (rotate-half form) of ``x`` (..., T, hd) at ``positions`` (T,)."""
    hd = x.shape[-1]
    inv_freq = ROPE_THETA ** (-torch.arange(0, hd, 2, dtype=torch.float64, device=x.device) / hd)
    angles = positions.double()[:, None] * inv_freq[None, :]
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1).float()
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1).float()
    half = hd // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def _attention(q, k, v, causal):
    """q (B, H, T, hd); k, v (B, KV, T_k, hd): softmax attention with repeated KV heads."""
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, dim=1)
    v = v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        t, tk = scores.shape[-2], scores.shape[-1]
        mask = torch.ones(t, tk, dtype=torch.bool, device=q.device).tril(diagonal=tk - t)
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def _layer_inputs(x, w, layer, h, kv):
    attn_norm, wqkv = w[1], w[2]
    d = x.shape[-1]
    hd = d // h
    qkv = _rms_norm(x, attn_norm[layer]) @ wqkv[layer]
    q, k, v = qkv.split([h * hd, kv * hd, kv * hd], dim=-1)
    return q, k, v, hd


def _mlp(x, w, layer):
    mlp_norm, w_gate_up, w_down = w[4], w[5], w[6]
    gate, up = (_rms_norm(x, mlp_norm[layer]) @ w_gate_up[layer]).chunk(2, dim=-1)
    return (gate * torch.sigmoid(gate) * up) @ w_down[layer]


def reference(tokens, *rest, **shape):
    decoding = "CTX" in shape
    caches, w = (rest[:2], rest[2:]) if decoding else ((), rest)
    w = tuple(t.float() for t in w)
    h, kv, n_layers = shape["H"], shape["KV"], shape["L"]
    b = tokens.shape[0]
    t = 1 if decoding else tokens.shape[1]
    start = shape["CTX"] if decoding else 0
    positions = torch.arange(start, start + t, device=tokens.device)
    x = w[0][tokens.reshape(b, t)]  # (B, T, D)
    for layer in range(n_layers):
        q, k, v, hd = _layer_inputs(x, w, layer, h, kv)
        q = _rope(q.view(b, t, h, hd).transpose(1, 2), positions)
        k = _rope(k.view(b, t, kv, hd).transpose(1, 2), positions)
        v = v.view(b, t, kv, hd).transpose(1, 2)
        if decoding:
            k = torch.cat([caches[0][layer].float(), k], dim=2)
            v = torch.cat([caches[1][layer].float(), v], dim=2)
        a = _attention(q, k, v, causal=not decoding)
        x = x + a.transpose(1, 2).reshape(b, t, h * hd) @ w[3][layer]
        x = x + _mlp(x, w, layer)
    return _rms_norm(x[:, -1], w[7]) @ w[8]


def work(shape, dtype):
    """Bytes and flops of an ideal forward: weights and KV cache read once, matmul flops."""
    size = torch.empty((), dtype=dtype).element_size()
    n_layers, d, h, kv, f, v = (shape[k] for k in MODEL_KEYS)
    hd = d // h
    b = shape["B"]
    layer_params = d * (h + 2 * kv) * hd + h * hd * d + 3 * d * f
    tokens = b * shape.get("S", 1)
    flops = 2 * tokens * n_layers * layer_params + 2 * b * d * v
    weight_bytes = (n_layers * (layer_params + 2 * d) + d * v + d) * size
    if "CTX" in shape:
        cache_bytes = 2 * n_layers * b * kv * shape["CTX"] * hd * size
        flops += 4 * n_layers * b * h * shape["CTX"] * hd
        return {"bytes": weight_bytes + cache_bytes + tokens * d * size, "flops": flops}
    s = shape["S"]
    flops += 2 * n_layers * b * h * s * s * hd  # causal QK^T and PV: half of 4*S^2*hd
    return {"bytes": weight_bytes + tokens * d * size * 2, "flops": flops}
