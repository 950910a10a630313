"""The standalone task checker catches each kind of broken task it promises to catch."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aka.tasks import Tolerance, load_task

REPO = Path(__file__).resolve().parents[2]


def _load_checker() -> ModuleType:
    name = "aka_tools_task_check"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / "task_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


checker = _load_checker()

GOOD_REFERENCE = """
import torch

def make_inputs(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape["M"], shape["N"], generator=g) * 2 + 1
    return (x.to(dtype=dtype, device=device),)

def reference(x):
    return x.double() * 3 + 2
"""
GOOD_KERNEL = """
import torch

SCALE_HINT = 4

def entry(x):
    return (x.float() * 3 + 2).to(x.dtype)
"""
SPEC = """
name: {name}
type: torch2triton
origin: a test fixture
instructions: compute 3x + 2
backend: torch
editable: [kernel.py{extra}]
entry: kernel.py:entry
dtypes: [float32]
tolerances:
  float32: {{atol: 1.0e-5, rtol: 1.0e-5}}
shapes:
  tuning: [{{M: 64, N: 64}}]
  cpu: [{{M: 3, N: 5}}]
  cpu_heldout: [{{M: 1, N: 7}}]
seeds: 2
devices: {devices}
tunables: {tunables}
"""


def _make_task(
    root: Path,
    *,
    reference: str = GOOD_REFERENCE,
    kernel: str = GOOD_KERNEL,
    tunables: str = "{SCALE_HINT: [2, 4]}",
    devices: str = "[cpu]",
    cuda_source: str | None = None,
) -> Path:
    folder = root / "fixture"
    (folder / "source").mkdir(parents=True)
    extra = ", kernel.cu" if cuda_source is not None else ""
    (folder / "task.yaml").write_text(
        SPEC.format(name="fixture", extra=extra, devices=devices, tunables=tunables)
    )
    (folder / "reference.py").write_text(textwrap.dedent(reference))
    (folder / "source" / "kernel.py").write_text(textwrap.dedent(kernel))
    if cuda_source is not None:
        (folder / "source" / "kernel.cu").write_text(cuda_source)
    return folder


def _problems(folder: Path) -> list[str]:
    report = checker.check_task(load_task(folder, root=folder.parent))
    return report.problems


def test_good_task_passes(tmp_path: Path) -> None:
    assert _problems(_make_task(tmp_path)) == []


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"kernel": "def entry(x):\n    return x.double() * 3\n"}, "baseline fails the tolerance"),
        (
            {"kernel": "def entry(x):\n    x.mul_(1.0001)\n    return x.double() * 3 + 2\n"},
            "mutates its inputs",
        ),
        (
            {"reference": GOOD_REFERENCE.replace("* 3 + 2", "+ torch.rand(x.shape)")},
            "not deterministic",
        ),
        (
            {"reference": GOOD_REFERENCE.replace("x.double() * 3 + 2", "x.double() * 1e-9")},
            "null answer 'zeros' passes",
        ),
        (
            {"reference": GOOD_REFERENCE.replace("x.double() * 3 + 2", "x.double()")},
            "null answer 'input_copy_0' passes",
        ),
        (
            {"reference": GOOD_REFERENCE.replace("manual_seed(seed)", "manual_seed(0)")},
            "does not depend on the seed",
        ),
        ({"tunables": "{BLOCK: [1, 2]}"}, "tunable BLOCK is not a module-level int"),
        ({"tunables": "{SCALE_HINT: [8, 16]}"}, "SCALE_HINT = 4 is not among"),
        ({"kernel": "raise RuntimeError('boom')\n"}, "RuntimeError: boom"),
    ],
)
def test_broken_task_is_reported(tmp_path: Path, kwargs: dict[str, str], expected: str) -> None:
    problems = _problems(_make_task(tmp_path, **kwargs))
    assert any(expected in p for p in problems), problems


def test_gpu_only_task_checks_reference_without_running_the_baseline(tmp_path: Path) -> None:
    kernel = "def entry(x):\n    raise RuntimeError('needs a GPU')\n"
    folder = _make_task(tmp_path, kernel=kernel, devices="[cuda]", tunables="{}")
    report = checker.check_task(load_task(folder, root=tmp_path))
    assert report.ok, report.problems
    assert any("baseline not run" in s for s in report.skipped)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    ("source", "fails"),
    [("__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n", False), ("int x = ;\n", True)],
)
def test_cuda_sources_are_compiled(tmp_path: Path, source: str, fails: bool) -> None:
    folder = _make_task(tmp_path, devices="[cuda]", cuda_source=source)
    problems = _problems(folder)
    assert any("nvcc failed on kernel.cu" in p for p in problems) is fails, problems


def test_missing_nvcc_is_a_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checker.shutil, "which", lambda _name: None)
    folder = _make_task(tmp_path, devices="[cuda]", cuda_source="int x = ;\n")
    report = checker.check_task(load_task(folder, root=tmp_path))
    assert report.ok
    assert any("nvcc not found" in s for s in report.skipped)


def test_main_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _make_task(tmp_path)
    assert checker.main(["--root", str(tmp_path)]) == 0
    assert "PASS" in capsys.readouterr().out
    (tmp_path / "fixture" / "source" / "kernel.py").write_text("def entry(x):\n    return x\n")
    assert checker.main(["--root", str(tmp_path), "fixture"]) == 1


@settings(max_examples=50, deadline=None)
@given(
    values=st.lists(
        st.floats(min_value=-1e3, max_value=1e3, allow_nan=False), min_size=1, max_size=16
    ),
    atol=st.floats(min_value=0, max_value=1e-2),
    rtol=st.floats(min_value=0, max_value=1e-2),
)
def test_null_zeros_fails_exactly_when_some_output_is_beyond_atol(
    values: list[float], atol: float, rtol: float
) -> None:
    ref = torch.tensor(values, dtype=torch.float64)
    tol = Tolerance(atol=atol, rtol=rtol)
    nulls = checker.null_answers((), ref, seed=0)
    zeros_pass = checker.passes(nulls["zeros"], ref, tol)
    assert zeros_pass == bool((ref.abs() <= atol + rtol * ref.abs()).all())
    assert not checker.passes(nulls["empty"], ref, tol)


def test_loose_float32_tolerance_is_reported(tmp_path: Path) -> None:
    folder = _make_task(tmp_path)
    spec = folder / "task.yaml"
    spec.write_text(
        spec.read_text().replace("{atol: 1.0e-5, rtol: 1.0e-5}", "{atol: 0.1, rtol: 0.01}")
    )
    assert any("bfloat16-rounded answer passes" in p for p in _problems(folder))
