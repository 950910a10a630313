"""The sealed core's GPU-only lines compile on a machine without a GPU.

``seal.cpp`` keeps its CUDA timing (events, the L2 flush, graph capture) under
``AKA_SEAL_CUDA``, which only a CUDA build of torch compiles. Without this check a change
there first meets a compiler on the GPU machine, where a failed build fails every
evaluation. :func:`aka.eval._native.check_source` compiles that variant against a CUDA
toolkit's headers, without linking.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aka.eval import _native

TOOLKIT = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"

pytestmark = pytest.mark.skipif(
    not (TOOLKIT / "cuda_runtime.h").is_file(), reason=f"no CUDA toolkit headers at {TOOLKIT}"
)


def test_the_cuda_variant_of_the_core_compiles() -> None:
    res = _native.check_source(cuda=True, toolkit=TOOLKIT)
    assert res["rc"] == 0, res["stderr"]
    assert "-DAKA_SEAL_CUDA" in str(res["cmd"])


def test_an_error_in_a_cuda_only_line_is_reported(tmp_path: Path) -> None:
    """The control: the same check fails on a copy whose CUDA-only block calls a member
    with the wrong arguments, a mistake the CPU build never compiles."""
    src = _native.SOURCE.read_text()
    begin = src.index("void setup_cuda(")
    call = 'arm_seed("graph", p, k, r, a)'
    assert src.index(call, begin) > begin
    broken = tmp_path / "seal.cpp"
    broken.write_text(src[:begin] + src[begin:].replace(call, 'arm_seed("graph", p, k)', 1))
    res = _native.check_source(cuda=True, toolkit=TOOLKIT, source=broken)
    assert res["rc"] != 0
    assert "arm_seed" in str(res["stderr"])


def test_a_missing_toolkit_is_named(tmp_path: Path) -> None:
    with pytest.raises(_native.AkaError, match="no CUDA toolkit headers") as err:
        _native.check_source(cuda=True, toolkit=tmp_path)
    assert "include folder" in str(err.value)
