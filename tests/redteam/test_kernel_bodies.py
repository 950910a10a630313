"""Triton kernel bodies that reach past the language to what only the interpreter has
(``aka.eval._jitbody``): a branch the compiler folds away can hide host code from the
GPU compile check, so the evaluator reads the bodies' text itself."""

from __future__ import annotations

import textwrap

import pytest

from aka.eval import hack_findings

HEAD = (
    "import numpy as np\nimport torch\nimport triton\nimport triton.language as tl\n"
    "import triton.runtime\n"
)


def _flags(body: str, decorator: str = "@triton.jit") -> list[tuple[str, str]]:
    src = (
        HEAD
        + f"{decorator}\ndef k(x_ptr, y_ptr, N: tl.constexpr):\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
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
    assert found == [("interpreter_access", HEAD.count("\n") + 3)], found


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


SPELLINGS = {
    # a name bound to jit at the top of the module
    "alias": "J = triton.jit\n\n@J\ndef k(x_ptr):\n    a = x_ptr.handle\n",
    # jit called with the function as a keyword
    "keyword": "def body(x_ptr):\n    a = x_ptr.handle\n\nk = triton.jit(fn=body)\n",
    # any expression is a decorator (Python 3.9)
    "subscript": "@[triton.jit][0]\ndef k(x_ptr):\n    a = x_ptr.handle\n",
    # jit applied where no scan of names follows it: the body calls the language
    "language": (
        "import functools\n\ndef body(x_ptr):\n    x = tl.load(x_ptr)\n    a = x.handle\n\n"
        "k = functools.reduce(lambda f, g: g(f), [triton.jit], body)\n"
    ),
    # a helper the kernel calls by name, itself calling no language function
    "helper": (
        "def inner(x):\n    return x.handle\n\ndef body(x_ptr):\n    return inner(tl.load(x_ptr))\n"
    ),
}


@pytest.mark.parametrize("how", sorted(SPELLINGS))
def test_a_kernel_is_read_however_jit_is_applied(how: str) -> None:
    found = hack_findings("kernel.py", HEAD + SPELLINGS[how], ["kernel.py"])
    assert any(f.flag == "interpreter_access" and ".handle" in f.detail for f in found), found


def test_host_code_that_defines_or_types_kernels_is_not_a_kernel() -> None:
    # a host function around a kernel of its own, a host function annotating its flags
    # tl.constexpr (upstream code does), and a dtype chosen by name: host code all
    src = HEAD + textwrap.dedent(
        """
        def launch(x, use_fp8: tl.constexpr):
            @triton.jit
            def k(x_ptr):
                tl.store(x_ptr, tl.load(x_ptr) * 2)

            kind = tl.float16 if x.dtype is torch.float16 else tl.float32
            k[(1,)](x.data)
            return type(x).__name__, np.zeros(1), kind
        """
    )
    assert hack_findings("kernel.py", src, ["kernel.py"]) == []


def test_a_helper_a_kernel_calls_through_an_attribute_is_a_kernel() -> None:
    src = HEAD + textwrap.dedent(
        """
        class Ops:
            @staticmethod
            def f(x):
                return x.handle

        def body(x_ptr):
            return Ops.f(tl.load(x_ptr))
        """
    )
    found = hack_findings("kernel.py", src, ["kernel.py"])
    assert any(f.flag == "interpreter_access" and "in kernel f" in f.detail for f in found), found
