"""Preflight: a device mismatch fails before any work, with a message that says the fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import runners_standin as standin

from aka.errors import AkaError, InputError
from aka_runners import DeviceInfo, detect_device, preflight

CPU = DeviceInfo("cpu", 0, "cpu")
TWO_GPUS = DeviceInfo("cuda", 2, "NVIDIA H200")


def test_cuda_target_on_a_cpu_node_fails_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(AkaError) as info:
        preflight("cuda", CPU)
    text = info.value.render()
    assert "sees no CUDA device" in text and "CUDA_VISIBLE_DEVICES=" in text and "fix:" in text


def test_index_beyond_visible_gpus_fails() -> None:
    with pytest.raises(AkaError, match="only 2 CUDA device"):
        preflight("cuda:2", TWO_GPUS)


@pytest.mark.parametrize(
    ("target", "info", "expected"),
    [
        ("cpu", TWO_GPUS, "cpu"),
        ("auto", CPU, "cpu"),
        ("auto", TWO_GPUS, "cuda"),
        ("cuda:1", TWO_GPUS, "cuda:1"),
    ],
)
def test_matching_targets_resolve(target: str, info: DeviceInfo, expected: str) -> None:
    assert preflight(target, info) == expected


def test_unknown_target_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown device"):
        preflight("tpu", CPU)


def test_detect_device_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    assert detect_device().kind == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.usefixtures("standin_path")
def test_worker_command_fails_preflight_before_claiming(
    cli: Callable[..., object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if detect_device().kind == "cuda":
        pytest.skip("this machine has a GPU; the mismatch needs a CPU-only one")
    standin.setup(tmp_path, {"a": 0.0})
    res = cli(
        "worker",
        "--run",
        "r",
        "--ledger",
        str(tmp_path),
        "--device",
        "cuda",
        "--source",
        "runners_standin:make",
    )
    assert res.code == 1  # type: ignore[attr-defined]
    assert "preflight" in res.err and "fix:" in res.err  # type: ignore[attr-defined]
    assert not (tmp_path / "claims").exists()
    assert standin.read_events(tmp_path) == []
