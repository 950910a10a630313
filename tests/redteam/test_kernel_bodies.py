"""Triton kernel bodies that reach past the language to what only the interpreter has
(``aka.eval._jitbody``): a branch the compiler folds away can hide host code from the
GPU compile check, so the evaluator reads the bodies' text itself."""

from __future__ import annotations

import textwrap

import pytest

from aka.eval import hack_findings

HEAD = "import numpy as np\nimport triton\nimport triton.language as tl\nimport triton.runtime\n"


def _flags(body: str, decorator: str = "@triton.jit") -> list[tuple[str, str]]:
    src = HEAD + f"{decorator}\ndef k(x_ptr, y_ptr, N: tl.constexpr):\n" + textwrap.indent(
        textwrap.dedent(body), "    "
    )
    return [(f.flag, f.detail) for f in hack_findings("kernel.py", src, ["kernel.py"])]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        # the interpreter's block: a numpy array behind the handle
        ("x = tl.load(x_ptr)\na = x.handle.data\n", ".handle"),
        # the branch the compiler folds: an IR value's class is not the interpreter's
        ("if x_ptr.handle.__class__.__name__ == 'T':\n    pass\n", ".handle"),
        ("if x_ptr.__class__ is None:\n    pass\n", ".__class__"),
        ("n = getattr(x_ptr, 'han' + 'dle')\n", "computed name"),
        ("n = getattr(x_ptr, 'handle')\n", ".handle"),
        ("if hasattr(x_ptr, '_semantic'):\n    pass\n", "._semantic"),
        ("t = type(x_ptr)\n", "type()"),
        ("v = vars(x_ptr)\n", "vars()"),
        ("e = np.exp(1.0)\n", "numpy"),
        ("m = triton.runtime.interpreter\n", "triton.runtime"),
    ],
)
def test_what_only_the_interpreter_has_is_named_in_a_kernel_body(body: str, why: str) -> None:
    found = _flags(body)
    assert any(f == "interpreter_access" and why in d and "in kernel k" in d for f, d in found)


@pytest.mark.parametrize(
    "decorator", ["@triton.jit", "@triton.jit(do_not_specialize=['N'])", "@tl.jit"]
)
def test_every_spelling_of_jit_is_a_kernel(decorator: str) -> None:
    assert _flags("a = x_ptr.handle\n", decorator)


def test_a_function_handed_to_jit_is_a_kernel_and_host_code_is_not() -> None:
    src = HEAD + textwrap.dedent(
        """
        def body(x_ptr):
            a = x_ptr.handle
        kernel = triton.jit(body)

        def host(x):
            return type(x).__name__, np.zeros(3), getattr(x, "shape")
        """
    )
    found = [(f.flag, f.line) for f in hack_findings("kernel.py", src, ["kernel.py"])]
    assert found == [("interpreter_access", 7)], found


def test_the_language_s_own_spellings_are_not_findings() -> None:
    # public attributes, dtype branches, constexpr arithmetic, a constant getattr
    body = """
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs, mask=offs < N, other=float("-inf"))
    if x.dtype == tl.float16:
        x = x.to(tl.float32)
    if y_ptr.dtype.element_ty.is_fp16():
        pass
    m = tl.max(x, axis=0)
    y = tl.exp(x - m) / tl.sum(tl.exp(x - m), axis=0)
    n = getattr(tl, "float32")
    s = x.shape[0] + len(x.shape) + min(N, 4)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=offs < N)
    """
    assert _flags(body) == []
