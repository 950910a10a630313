"""Forbidden APIs as library operators: what actually ran, not what the source spells.

A task forbids names such as ``torch.softmax`` or ``torch.nn.functional.linear``. Matching
those names in the source misses ``x.softmax()``, ``getattr(torch, "soft" + "max")``, an
alias module, or a copy kernel around the library call. The sealed core records which
ATen operators ran inside the candidate's checked calls (a RecordFunction callback in
native code), and this module turns each forbidden name into the operators it dispatches
to, so any spelling of the same operator is caught. A task may also forbid operators by
their own name (``aten::mm``).

A forbidden list is still a list: softmax forbidden, ``exp2`` of a rescaled input is not;
rms_norm and its reductions forbidden, a matmul with a column of ones is not. A task whose
kernel may call the library only to allocate, copy and view (``operators: plumbing`` in
task.yaml) turns it around: every operator a candidate call runs that is neither plumbing
(:data:`PLUMBING`, :data:`MORE_PLUMBING`) nor in its ``allowed_operators`` is charged
(:func:`allowed_operators`), whatever its name.
"""

from __future__ import annotations

# Public names whose operators are not simply ``aten::<name>`` / ``aten::_<name>``.
_ALIASES: dict[str, tuple[str, ...]] = {
    "matmul": ("mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "_mm"),
    "mm": ("mm", "addmm"),
    "bmm": ("bmm", "baddbmm"),
    "linear": ("addmm", "mm", "bmm", "_addmm_activation"),
    "einsum": ("bmm", "mm"),
    "softmax": ("_softmax", "softmax", "_safe_softmax", "_masked_softmax", "_sparse_softmax"),
    "log_softmax": ("_log_softmax", "log_softmax"),
    "layer_norm": ("native_layer_norm", "layer_norm"),
    "rms_norm": ("_fused_rms_norm", "rms_norm"),
    "group_norm": ("native_group_norm",),
    "batch_norm": (
        "native_batch_norm",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_no_training",
        "cudnn_batch_norm",
    ),
    "scaled_dot_product_attention": (
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_attention_math",
        "_flash_attention_forward",
        "_efficient_attention_forward",
    ),
    "conv1d": ("convolution", "_convolution", "cudnn_convolution", "conv1d"),
    "conv2d": (
        "convolution",
        "_convolution",
        "cudnn_convolution",
        "conv2d",
        "mkldnn_convolution",
        "_slow_conv2d_forward",
    ),
    "conv3d": ("convolution", "_convolution", "cudnn_convolution", "conv3d", "slow_conv3d"),
    "conv_transpose2d": ("convolution", "_convolution", "cudnn_convolution_transpose"),
    "cumsum": ("cumsum", "_cumsum"),
    "topk": ("topk",),
    "sort": ("sort", "_sort"),
    "gelu": ("gelu",),
    "silu": ("silu",),
    "relu": ("relu", "relu_", "clamp_min"),
}


# Python operators on tensors (``a >> 4``, ``a & m``, ``a @ b``): ``torch.Tensor.__rshift__``
# names ``aten::__rshift__`` (its own operator, which does not run the bitwise one inside)
# and the function that computes the same thing. Reflected (``__rrshift__``) and in-place
# (``__irshift__``) forms are the same operators.
_DUNDERS: dict[str, tuple[str, ...]] = {
    "and": ("bitwise_and",),
    "or": ("bitwise_or",),
    "xor": ("bitwise_xor",),
    "lshift": ("bitwise_left_shift",),
    "rshift": ("bitwise_right_shift",),
    "invert": ("bitwise_not",),
    "matmul": ("matmul", *_ALIASES["matmul"]),
    "mul": ("mul",),
    "add": ("add",),
    "sub": ("sub", "rsub"),
    "truediv": ("div",),
    "floordiv": ("floor_divide",),
    "mod": ("remainder",),
    "pow": ("pow",),
    "neg": ("neg",),
    "abs": ("abs",),
}


def _dunder(name: str) -> set[str]:
    """The operators a ``__x__`` name (``__rx__``, ``__ix__`` alike) stands for."""
    core = name[2:-2]
    for base in (core, core[1:]):
        if base in _DUNDERS:
            dunders = {f"__{base}__", f"__r{base}__", f"__i{base}__"}
            return {f"aten::{d}" for d in dunders} | {
                f"aten::{op}{tail}" for op in _DUNDERS[base] for tail in ("", "_")
            }
    return set()


# Data movement and allocation that wrappers and libraries do on every call (``.contiguous()``,
# ``empty_like``, a copy back into an output): a task that forbids one of these by name is
# left to the name check, so library plumbing is never taken for the candidate's choice.
PLUMBING = frozenset(
    f"aten::{op}"
    for op in (
        "copy_",
        "clone",
        "contiguous",
        "empty",
        "empty_like",
        "empty_strided",
        "zeros",
        "zeros_like",
        "zero_",
        "fill_",
        "to",
        "_to_copy",
        "detach",
        "view",
        "reshape",
        "as_strided",
        "resize_",
        "set_",
        "item",
        "_local_scalar_dense",
        "select",
        "slice",
        "expand",
        "t",
        "transpose",
        "permute",
        "numpy_T",
        "T",
        "mT",
        "unsqueeze",
        "squeeze",
        "flatten",
        "lift_fresh",
        "alias",
        "new_empty",
        "new_zeros",
        "full",
        "full_like",
        "ones",
        "ones_like",
        "arange",
        "split",
        "chunk",
        "narrow",
        "unbind",
        "stride",
        "size",
    )
)


MORE_PLUMBING = frozenset(
    f"aten::{op}"
    for op in (
        "_reshape_alias",
        "_unsafe_view",
        "view_as",
        "reshape_as",
        "expand_as",
        "resolve_conj",
        "resolve_neg",
        "as_strided_",
        "empty_permuted",
        "new_full",
        "new_ones",
        "new_empty_strided",
        "scalar_tensor",
        "lift_fresh_copy",
        "_has_compatible_shallow_copy_type",
        "is_nonzero",
        "record_stream",
        "unsqueeze_",
        "squeeze_",
        "cat",
        "stack",
        "constant_pad_nd",
        "pad",
        "numpy",
        "cpu",
        "cuda",
        "type_as",
        "_copy_from",
        "_copy_from_and_resize",
        "set_data",
        "requires_grad_",
        "is_pinned",
        "pin_memory",
        "_pin_memory",
        "data",
        "view_as_real",
        "view_as_complex",
        "movedim",
        "moveaxis",
        "swapaxes",
        "swapdims",
        "unflatten",
        "repeat",
        "tile",
        "broadcast_to",
    )
)
"""What else only moves, lays out or allocates data, allowed where only plumbing is
(``operators: plumbing``); not subtracted from forbidden lists, which name what they mean."""


def allowed_operators(operators: str, allowed: list[str], forbidden: list[str]) -> set[str]:
    """The operators a candidate call may run under ``operators`` (empty: any but the
    forbidden ones): plumbing and the task's ``allowed`` names' operators, less any
    forbidden one."""
    if operators != "plumbing":
        return set()
    extra = forbidden_operators(allowed) | {a for a in allowed if a.startswith("aten::")}
    return set(PLUMBING | MORE_PLUMBING | extra) - (forbidden_operators(forbidden) - PLUMBING)


def forbidden_operators(forbidden: list[str]) -> set[str]:
    """ATen operator names (``aten::x``) that any of the ``forbidden`` APIs dispatches to."""
    ops: set[str] = set()
    for name in forbidden:
        if name.startswith("aten::"):
            ops.add(name)
            continue
        last = name.rsplit(".", 1)[-1]
        if last.startswith("__") and last.endswith("__"):
            ops |= _dunder(last)
            continue
        if not last or last.startswith("__"):
            continue
        for op in (last, f"_{last}", *_ALIASES.get(last, ())):
            ops.add(f"aten::{op}")
            if not op.endswith("_"):  # the in-place form is the same operator (x.mul_(2))
                ops.add(f"aten::{op}_")
    return ops - PLUMBING
