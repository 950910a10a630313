"""Preflight: the device a worker sees must be the device the run was configured for.

A run configured for ``cuda`` that lands on a CPU-only node (a missing ``--gres``, an
empty ``CUDA_VISIBLE_DEVICES``, a container started without device requests) would
otherwise run every attempt, fail every evaluation and burn the agent budget. The check
runs before any claim.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass

from aka.errors import AkaError, InputError

__all__ = ["DeviceInfo", "detect_device", "preflight"]

_TARGET = re.compile(r"^(auto|cpu|cuda(?::(\d+))?)$")


@dataclass(frozen=True)
class DeviceInfo:
    """What this process can compute on.

    Attributes:
        kind: ``"cuda"`` or ``"cpu"``.
        count: visible CUDA devices (0 on CPU).
        name: the first device's name, or ``"cpu"``.
    """

    kind: str
    count: int
    name: str


def detect_device() -> DeviceInfo:
    """CUDA through torch when torch is importable and sees a GPU, else CPU.

    torch is imported only here and only if installed, so CPU-only installs (and the
    ledger tools) never pay for it.
    """
    if importlib.util.find_spec("torch") is None:
        return DeviceInfo("cpu", 0, "cpu")
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return DeviceInfo("cuda", torch.cuda.device_count(), torch.cuda.get_device_name(0))
    return DeviceInfo("cpu", 0, "cpu")


def preflight(target: str, detected: DeviceInfo | None = None) -> str:
    """Check ``target`` against the detected device; return the device to run on.

    Args:
        target: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (the run config's device).
        detected: the device to compare with (default: :func:`detect_device`).

    Raises:
        InputError: ``target`` is not one of the accepted spellings.
        AkaError: a CUDA target on a node where no (or too few) GPUs are visible.
    """
    m = _TARGET.match(target)
    if m is None:
        raise InputError(
            f"unknown device {target!r}",
            where="device",
            fix="use 'auto', 'cpu', 'cuda' or 'cuda:N'",
        )
    info = detected if detected is not None else detect_device()
    if target == "auto":
        return info.kind
    if target == "cpu":
        return "cpu"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
    if info.kind != "cuda":
        raise AkaError(
            f"the run targets {target!r} but this worker sees no CUDA device "
            f"(CUDA_VISIBLE_DEVICES={visible}); nothing was run",
            where="preflight",
            fix="run on a GPU node (Slurm: --gpus-per-node; Docker: a GPU device request; "
            "local: --gpus), install a CUDA build of torch, or set device: cpu in the config",
        )
    index = int(m.group(2)) if m.group(2) is not None else 0
    if index >= info.count:
        raise AkaError(
            f"the run targets {target!r} but only {info.count} CUDA device(s) are visible "
            f"(CUDA_VISIBLE_DEVICES={visible}); nothing was run",
            where="preflight",
            fix="use device: cuda (each worker is pinned to its own GPU) or a visible index",
        )
    return target
