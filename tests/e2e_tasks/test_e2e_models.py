"""The end-to-end Llama tasks: the model, its reference and its inputs, in process on CPU.

The bundled-task checker (tests/tasks) already runs each baseline against its reference
and the null answers; these tests hold what is particular to a served model: one fixed
model shared by every input set, the PyTorch model equal to the independent fp32
reference for any small configuration, each folder's model running its own kernel, and
broken kernels failing the tolerance once inside the model.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
import torch
import yaml
from e2e_helpers import E2E, TASK_NAMES, load, wrong_kernel
from hypothesis import given, settings
from hypothesis import strategies as st

REF = load(E2E / TASK_NAMES[0] / "reference.py")
LLAMA = load(E2E / TASK_NAMES[0] / "source" / "llama.py")


def _spec(name: str) -> dict:
    return yaml.safe_load((E2E / name / "task.yaml").read_text())


def test_there_are_prefill_and_decode_tasks() -> None:
    shapes = [_spec(n)["shapes"]["tuning"][0] for n in TASK_NAMES]
    assert len(TASK_NAMES) >= 2
    assert any("S" in s for s in shapes) and any("CTX" in s for s in shapes)


@pytest.mark.parametrize("rel", ["reference.py", "source/llama.py"])
def test_shared_files_are_identical_copies(rel: str) -> None:
    texts = {n: (E2E / n / rel).read_text() for n in TASK_NAMES}
    assert len(set(texts.values())) == 1, f"{rel} differs between {sorted(texts)}"


@pytest.mark.parametrize("name", TASK_NAMES)
def test_one_model_serves_every_input_set(name: str) -> None:
    shape = _spec(name)["shapes"]["cpu"][0]
    a = REF.make_inputs(shape, torch.bfloat16, "cpu", 1)
    b = REF.make_inputs(shape, torch.bfloat16, "cpu", 2)
    again = REF.make_inputs(shape, torch.bfloat16, "cpu", 1)
    n_weights = 9
    assert all(x is y for x, y in zip(a[-n_weights:], b[-n_weights:], strict=True))
    assert all(torch.equal(x, y) for x, y in zip(a, again, strict=True))
    assert not torch.equal(a[0], b[0])  # the prompts (and any cache) come from the seed
    assert not torch.equal(REF.reference(*a, **shape), REF.reference(*b, **shape))


@st.composite
def configs(draw: st.DrawFn) -> dict[str, int]:
    kv = draw(st.integers(1, 2))
    h = kv * draw(st.integers(1, 3))
    hd = 2 * draw(st.integers(1, 4))
    shape = {
        "B": draw(st.integers(1, 3)),
        "L": draw(st.integers(1, 2)),
        "D": h * hd,
        "H": h,
        "KV": kv,
        "F": draw(st.integers(1, 24)),
        "V": draw(st.integers(2, 40)),
    }
    key = "S" if draw(st.booleans()) else "CTX"
    shape[key] = draw(st.integers(1, 6))
    return shape


@settings(max_examples=30, deadline=None)
@given(shape=configs(), seed=st.integers(0, 2**16))
def test_pytorch_model_matches_the_reference(shape: dict[str, int], seed: int) -> None:
    inputs = REF.make_inputs(shape, torch.float32, "cpu", seed)
    fn = LLAMA.decode if "CTX" in shape else LLAMA.prefill
    out = fn(LLAMA.Ops(), *inputs, **shape)
    expected = REF.reference(*inputs, **shape)
    assert out.shape == (shape["B"], shape["V"])
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_each_folder_runs_its_own_kernel(name: str, tmp_path: Path) -> None:
    """Two copies of a task's model in one process, one with a broken kernel, differ.

    This is what the evaluator does with a baseline and a candidate: a model that
    imported ``kernel`` by module name would run the first copy's kernel in both.
    """
    spec = _spec(name)
    shutil.copytree(E2E / name / "source", tmp_path / "wrong")
    (tmp_path / "wrong" / "kernel.py").write_text(wrong_kernel(name))
    entry_file, symbol = spec["entry"].split(":")
    good = getattr(load(E2E / name / "source" / entry_file), symbol)
    bad = getattr(load(tmp_path / "wrong" / entry_file), symbol)
    shape = spec["shapes"]["cpu"][0]
    tol = spec["tolerances"]["bfloat16"]
    inputs = REF.make_inputs(shape, torch.bfloat16, "cpu", 3)
    expected = REF.reference(*inputs, **shape).double()
    ok = good(*inputs, **shape).double()
    wrong = bad(*inputs, **shape).double()
    assert torch.allclose(ok, expected, atol=tol["atol"], rtol=tol["rtol"])
    assert not torch.allclose(wrong, expected, atol=tol["atol"], rtol=tol["rtol"])


@pytest.mark.parametrize("name", TASK_NAMES)
def test_tuning_shapes_share_one_model(name: str) -> None:
    """A fixed workload: held-out shapes change the batch, never the served model."""
    spec = _spec(name)["shapes"]
    models = {tuple(s[k] for k in REF.MODEL_KEYS) for s in spec["tuning"] + spec["heldout"]}
    assert len(models) == 1


@pytest.mark.parametrize("name", TASK_NAMES)
def test_gpu_model_size(name: str) -> None:
    """docs/serving.md: about 0.31 G parameters (0.6 GB in bfloat16) on the GPU."""
    s = _spec(name)["shapes"]["tuning"][0]
    hd = s["D"] // s["H"]
    layer = s["D"] * (s["H"] + 2 * s["KV"]) * hd + s["H"] * hd * s["D"] + 3 * s["D"] * s["F"]
    params = s["L"] * (layer + 2 * s["D"]) + 2 * s["V"] * s["D"] + s["D"]
    assert 0.30e9 < params < 0.32e9
