"""The free-memory reading that admission waits for: NVML in this process, else the tool.

Every evaluation that starts beside others on a GPU waits for one reading, one start at
a time, so the reading must be cheap (NVML, no child process) and must still answer where
only ``nvidia-smi`` exists. Both must name the same GPU the evaluation processes see
under ``CUDA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from aka.eval import _memory
from aka.eval._memory import gpu_free_fraction, memory_reader


class _Error(Exception):
    pass


def fake_nvml(*, fails: bool = False) -> tuple[types.ModuleType, dict[str, Any]]:
    """A stand-in for ``pynvml`` over two GPUs (index 0: 30 of 80 free; index 1 and
    ``GPU-b``: 60 of 80), recording what it was asked."""
    asked: dict[str, Any] = {"init": 0, "handles": []}
    free = {0: 30, 1: 60, "GPU-b": 60}

    def init() -> None:
        asked["init"] += 1
        if fails:
            raise _Error("NVML Shared Library Not Found")

    def by_index(i: int) -> Any:
        asked["handles"].append(i)
        if i not in free:
            raise _Error("Invalid Argument")
        return i

    def by_uuid(u: str) -> Any:
        asked["handles"].append(u)
        if u not in free:
            raise _Error("Not Found")
        return u

    module = types.ModuleType("pynvml")
    module.NVMLError = _Error  # type: ignore[attr-defined]
    module.nvmlInit = init  # type: ignore[attr-defined]
    module.nvmlDeviceGetHandleByIndex = by_index  # type: ignore[attr-defined]
    module.nvmlDeviceGetHandleByUUID = by_uuid  # type: ignore[attr-defined]
    module.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(  # type: ignore[attr-defined]
        free=free[h] * 2**30, total=80 * 2**30, used=(80 - free[h]) * 2**30
    )
    return module, asked


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A host with a fresh NVML state and an ``nvidia-smi`` on PATH that logs its
    arguments and reports 20 of 80 GiB used (the log file says whether it ran)."""
    monkeypatch.setattr(_memory, "_NVML", [])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "smi.log"}\necho "20480, 81920"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return tmp_path


def test_nvml_answers_in_process_without_the_tool(host: Path, monkeypatch) -> None:
    module, asked = fake_nvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    assert gpu_free_fraction("cuda:0") == pytest.approx(30 / 80)
    assert gpu_free_fraction("cuda") == pytest.approx(30 / 80)
    assert gpu_free_fraction("cuda:1") == pytest.approx(60 / 80)
    assert asked["init"] == 1, "NVML is initialized once per process, not per reading"
    assert not (host / "smi.log").exists(), "no child process when NVML answers"


def test_the_reading_follows_the_visible_devices(host: Path, monkeypatch) -> None:
    module, asked = fake_nvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1, 0")
    assert gpu_free_fraction("cuda:0") == pytest.approx(60 / 80)  # physical GPU 1
    assert gpu_free_fraction("cuda:1") == pytest.approx(30 / 80)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-b")
    assert gpu_free_fraction("cuda:0") == pytest.approx(60 / 80)
    assert asked["handles"] == [1, 0, "GPU-b"]


def test_without_nvml_the_tool_answers_for_the_same_gpu(host: Path, monkeypatch) -> None:
    module, asked = fake_nvml(fails=True)
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,2")
    assert gpu_free_fraction("cuda:1") == pytest.approx(1 - 20480 / 81920)
    assert gpu_free_fraction("cuda:1") == pytest.approx(0.75)
    assert asked["init"] == 1, "a failed NVML load is not retried on every reading"
    calls = (host / "smi.log").read_text().splitlines()
    assert len(calls) == 2 and all(c.endswith("-i 2") for c in calls)


def test_an_id_nvml_does_not_know_falls_back_to_the_tool(host: Path, monkeypatch) -> None:
    module, _ = fake_nvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-7")
    assert gpu_free_fraction("cuda:0") == pytest.approx(0.75)
    assert (host / "smi.log").read_text().split()[-1] == "MIG-7"


def test_unknown_without_a_driver_or_off_the_gpu(host: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # the package is not installed
    (host / "bin" / "nvidia-smi").unlink()
    assert gpu_free_fraction("cuda:0") is None
    assert gpu_free_fraction("cpu") is None


def test_the_reader_is_named(host: Path, monkeypatch) -> None:
    module, _ = fake_nvml()
    monkeypatch.setitem(sys.modules, "pynvml", module)
    assert memory_reader() == "nvml"
    monkeypatch.setattr(_memory, "_NVML", [])
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(fails=True)[0])
    assert memory_reader() == "nvidia-smi"
    (host / "bin" / "nvidia-smi").unlink()
    assert memory_reader() is None
