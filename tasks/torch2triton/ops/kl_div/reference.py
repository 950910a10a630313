"""Reference for the per-row KL divergence task, computed in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, v = shape["M"], shape["V"]
        # Student logits are the teacher's plus noise of a per-row size and a different
        # offset (offsets cancel in softmax, so only a stable kernel is right); the KL per
        # row spans small to large values.
        teacher = torch.randn(m, v, generator=g) * 2.5 + torch.randn(m, 1, generator=g) * 5.0
        noise = torch.randn(m, v, generator=g) * (torch.rand(m, 1, generator=g) * 1.5 + 0.3)
        student = teacher + noise + torch.randn(m, 1, generator=g) * 5.0
        # A random eighth of the rows (at least one) gets one logit 110-140 above the row's
        # maximum, in the teacher and in the student at two random columns other than the
        # first and the last: the range within such a row exceeds float32's exp range, so
        # shifting by any element but the maximum (the first, the last) or by the row's mean
        # overflows. The columns differ, so the row's KL is large (about the student's gap),
        # never about zero. Planted before the move below, which then keeps its level.
        rows = torch.randperm(m, generator=g)[: max(1, m // 8)]
        span = max(1, v - 2)
        cols = torch.randint(0, span, (rows.numel(),), generator=g)
        apart = (cols + torch.randint(1, max(2, span), (rows.numel(),), generator=g)) % span
        gap = 110.0 + 30.0 * torch.rand(2, rows.numel(), generator=g)
        teacher[rows, cols + 1] = teacher[rows].amax(-1) + gap[0]
        student[rows, apart + 1] = student[rows].amax(-1) + gap[1]
        # A random eighth of the rows (at least one), student too, moved so that the teacher's
        # max lies 110-140 above or below zero, where float32's exp fails unless it is subtracted.
        far = torch.randperm(m, generator=g)[: max(1, m // 8)]
        sign = torch.randint(0, 2, (far.numel(), 1), generator=g) * 2 - 1
        shift = sign * (110.0 + 30.0 * torch.rand(far.numel(), 1, generator=g))
        shift = shift - teacher[far].amax(-1, keepdim=True)
        teacher[far] += shift
        student[far] += shift
        return teacher.to(dtype=dtype, device=device), student.to(dtype=dtype, device=device)


def reference(teacher, student):
    lp = torch.log_softmax(teacher.double(), dim=-1)
    lq = torch.log_softmax(student.double(), dim=-1)
    return (lp.exp() * (lp - lq)).sum(dim=-1)


def work(shape, dtype):
    elems = shape["M"] * shape["V"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 2 * elems * size + 4 * shape["M"], "flops": 8 * elems}
