"""The torch functions an ``nn`` module the problem's Model holds stands for.

A KernelBench Model usually builds its layers in ``__init__`` (``self.gn =
nn.GroupNorm(...)``) and calls them in its forward (``self.gn(x)``), so its forward's
source names no torch function: forbidding only what the forward spells left the
starting code, which still calls ``nn.GroupNorm``, a legal answer. The probe lists the
torch modules the Model instance holds (:func:`torch_modules`), and each becomes the
public functions that compute the same thing (:func:`equivalents`): names the static
check finds in a candidate's source, and that :func:`aka.eval._ops.forbidden_operators`
turns into the ATen operators the module dispatches to (``torch.convolution`` for every
convolution, ``torch.nn.functional.group_norm`` for ``aten::native_group_norm``), which
the operator check finds however the module is called.

The module classes themselves are not forbidden: a candidate keeps ``nn.Conv2d`` in its
``__init__`` for the parameters (created in the same order, from the same seed, as the
reference's), and only running it is the torch computation it must replace.

Runs in the probe's child process (it imports torch); kept apart from the probe so the
table is read and tested on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

F = "torch.nn.functional."
CONVOLUTION = "torch.convolution"
"""The operator every convolution (transposed or not, any rank) dispatches to."""
UPSAMPLE = tuple(
    f"torch._C._nn.upsample_{m}"
    for m in ("nearest1d", "nearest2d", "nearest3d", "linear1d", "bilinear2d", "bicubic2d",
              "trilinear3d")
)  # fmt: skip

NOTHING: frozenset[str] = frozenset({
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Container", "Identity", "Flatten", "Unflatten", "DataParallel", "Dropout", "Dropout1d",
    "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
})  # fmt: skip
"""Containers, reshapes and dropouts (the identity in eval mode, as the reference runs):
nothing to replace, and forbidding ``aten::dropout`` would flag a kept ``nn.Dropout``."""


def _table() -> dict[str, tuple[str, ...]]:
    """Class name -> the public functions computing what the module computes."""
    table: dict[str, tuple[str, ...]] = {
        "Linear": (F + "linear",),
        "LazyLinear": (F + "linear",),
        "Bilinear": (F + "bilinear",),
        "GroupNorm": (F + "group_norm",),
        "LayerNorm": (F + "layer_norm",),
        "RMSNorm": (F + "rms_norm",),
        "SyncBatchNorm": (F + "batch_norm",),
        "LocalResponseNorm": (F + "local_response_norm",),
        "Embedding": (F + "embedding",),
        "EmbeddingBag": (F + "embedding_bag",),
        "RNN": ("torch.rnn_tanh", "torch.rnn_relu"),
        "LSTM": ("torch.lstm",),
        "GRU": ("torch.gru",),
        "RNNCell": ("torch.rnn_tanh_cell", "torch.rnn_relu_cell"),
        "LSTMCell": ("torch.lstm_cell",),
        "GRUCell": ("torch.gru_cell",),
        "MultiheadAttention": (
            F + "multi_head_attention_forward",
            F + "linear",
            F + "scaled_dot_product_attention",
            "torch.softmax",
            "torch._native_multi_head_attention",
        ),
        "TransformerEncoderLayer": ("torch._transformer_encoder_layer_fwd",),
        "ReLU": ("torch.relu", F + "relu"),
        "LeakyReLU": (F + "leaky_relu",),
        "ReLU6": (F + "relu6", F + "hardtanh"),
        "PReLU": (F + "prelu",),
        "RReLU": (F + "rrelu",),
        "Sigmoid": ("torch.sigmoid", F + "sigmoid"),
        "Tanh": ("torch.tanh", F + "tanh"),
        "Softmax": ("torch.softmax", F + "softmax"),
        "Softmax2d": ("torch.softmax", F + "softmax"),
        "Softmin": (F + "softmin", "torch.softmax"),
        "LogSoftmax": ("torch.log_softmax", F + "log_softmax"),
        "Upsample": (F + "interpolate", *UPSAMPLE),
        "UpsamplingNearest2d": (F + "interpolate", *UPSAMPLE),
        "UpsamplingBilinear2d": (F + "interpolate", *UPSAMPLE),
        "ChannelShuffle": ("torch.channel_shuffle",),
        "BCELoss": (F + "binary_cross_entropy",),
        "BCEWithLogitsLoss": (F + "binary_cross_entropy_with_logits",),
        "NLLLoss2d": (F + "nll_loss",),
        "MultiLabelMarginLoss": (F + "multilabel_margin_loss",),
        "MultiLabelSoftMarginLoss": (F + "multilabel_soft_margin_loss",),
    }
    for n in "123":
        d = f"{n}d"
        table |= {
            f"Conv{d}": (F + f"conv{d}", CONVOLUTION),
            f"LazyConv{d}": (F + f"conv{d}", CONVOLUTION),
            f"ConvTranspose{d}": (F + f"conv_transpose{d}", CONVOLUTION),
            f"LazyConvTranspose{d}": (F + f"conv_transpose{d}", CONVOLUTION),
            f"BatchNorm{d}": (F + "batch_norm",),
            f"LazyBatchNorm{d}": (F + "batch_norm",),
            f"InstanceNorm{d}": (F + "instance_norm", F + "batch_norm"),
            f"LazyInstanceNorm{d}": (F + "instance_norm", F + "batch_norm"),
            f"MaxPool{d}": (F + f"max_pool{d}", F + f"max_pool{d}_with_indices"),
            f"AvgPool{d}": (F + f"avg_pool{d}",),
            f"AdaptiveAvgPool{d}": (F + f"adaptive_avg_pool{d}",),
            f"AdaptiveMaxPool{d}": (F + f"adaptive_max_pool{d}", F + f"adaptive_max_pool{d}_with_indices"),
            f"LPPool{d}": (F + f"lp_pool{d}",),
            f"MaxUnpool{d}": (F + f"max_unpool{d}",),
        }  # fmt: skip
        for pad in ("Constant", "Reflection", "Replication", "Circular", "Zero"):
            table[f"{pad}Pad{d}"] = (F + "pad", "torch.constant_pad_nd")
    return table


TABLE = _table()


def _snake(name: str) -> str:
    """``CrossEntropyLoss`` -> ``cross_entropy_loss``, ``MSELoss`` -> ``mse_loss``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _guesses(name: str) -> list[str]:
    """Public functions a module class not in :data:`TABLE` may stand for, most likely
    first: ``CosineSimilarity`` -> ``cosine_similarity``, ``HuberLoss`` -> ``huber_loss``,
    ``CrossEntropyLoss`` -> ``cross_entropy``, ``LogSigmoid`` -> ``logsigmoid``."""
    snake = _snake(name)
    stems = [snake, snake.removesuffix("_loss"), name.lower(), re.sub(r"_?[123]d$", "", snake)]
    return [f"{where}{s}" for s in dict.fromkeys(stems) for where in (F, "torch.")]


def _exists(dotted: str) -> bool:
    """Whether ``dotted`` (``torch.x.y``) is an attribute path of torch here: a forbidden
    name that does not resolve fails the task's validation."""
    import importlib

    module, _, rest = dotted.partition(".")
    obj: Any = importlib.import_module(module)
    for part in rest.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return callable(obj)


def torch_modules(model: Any) -> list[type]:
    """The torch classes behind every module ``model`` holds (itself and its children,
    at any depth): for a class of the problem's own derived from one (``class
    MyConv(nn.Conv2d)``), the torch class it derives from."""
    found: dict[str, type] = {}
    for module in model.modules():
        base = next((c for c in type(module).__mro__ if c.__module__.startswith("torch.nn.")), None)
        if base is not None and base.__name__ not in NOTHING:
            found[base.__name__] = base
    return [found[k] for k in sorted(found)]


def equivalents(classes: Iterable[type]) -> list[str]:
    """The public torch functions (dotted, each resolving here) that compute what the
    modules of ``classes`` compute; a class with neither a :data:`TABLE` row nor a
    function of its own name adds nothing."""
    names: set[str] = set()
    for cls in classes:
        if cls.__name__ in NOTHING:
            continue
        row = TABLE.get(cls.__name__)
        if row is None:
            row = tuple(next(([g] for g in _guesses(cls.__name__) if _exists(g)), []))
        names.update(n for n in row if _exists(n))
    return sorted(names)
