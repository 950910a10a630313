"""Device names, fingerprints and clock/temperature readings.

torch and NVML are imported inside the functions that need them, so ``import aka.timing``
stays cheap and works where neither is installed.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
from typing import Any

from aka.errors import InputError

__all__ = ["CARD_KEYS", "device_fingerprint", "device_kind", "parse_device", "read_clocks"]

# NVML clock-event reasons that mean the clock was pulled down by power or heat:
# SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake.
_THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
_REASON_NAMES = {
    0x1: "gpu_idle",
    0x2: "applications_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clock",
}


def parse_device(device: str) -> tuple[str, int]:
    """Split ``cpu`` / ``cuda`` / ``cuda:N`` into kind and index, or raise InputError."""
    text = device.strip().lower()
    if text == "cpu":
        return "cpu", 0
    if text == "cuda":
        return "cuda", 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return "cuda", int(text[5:])
    raise InputError(
        f"unknown device {device!r}", where="device", fix="use 'cpu', 'cuda' or 'cuda:N'"
    )


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _nvml_handle(index: int) -> Any | None:
    """NVML handle of CUDA device ``index`` (by UUID, so CUDA_VISIBLE_DEVICES is honoured)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # NVML absent or no driver: readings are optional
        return None
    try:
        import torch

        uuid = str(torch.cuda.get_device_properties(index).uuid)
        return pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
    except Exception:
        with contextlib.suppress(Exception):
            return pynvml.nvmlDeviceGetHandleByIndex(index)
    return None


def read_clocks(device: str) -> dict[str, Any]:
    """SM/memory clocks, temperature, power and slowdown reasons now; ``{}`` if unknown."""
    kind, index = parse_device(device)
    if kind != "cuda":
        return {}
    handle = _nvml_handle(index)
    if handle is None:
        return {}
    import pynvml

    out: dict[str, Any] = {}
    readers = {
        "sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
        "mem_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
        "max_sm_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
        "temperature_c": lambda: pynvml.nvmlDeviceGetTemperature(
            handle, pynvml.NVML_TEMPERATURE_GPU
        ),
        "power_w": lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
        "reasons_mask": lambda: pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle),
    }
    for key, read in readers.items():
        with contextlib.suppress(Exception):
            out[key] = read()
    mask = out.get("reasons_mask")
    if isinstance(mask, int):
        out["reasons"] = [name for bit, name in _REASON_NAMES.items() if mask & bit]
        out["throttled"] = bool(mask & _THROTTLE_MASK)
    return out


CARD_KEYS = ("uuid", "device")
"""Fingerprint keys naming one card (its UUID, its index on the host), not its kind."""


def device_kind(fingerprint: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint without the card's identity: which *kind* of device it is.

    Arms of a run on a host with several identical GPUs land on different cards; they
    are comparable when the cards are of one kind (same model, driver, runtime, library
    versions), which is what ``aka compare`` checks. The full fingerprint stays recorded.
    """
    return {k: v for k, v in fingerprint.items() if k not in CARD_KEYS}


def device_fingerprint(device: str = "cpu") -> dict[str, Any]:
    """What identifies the measuring machine: enough to refuse comparing unlike numbers.

    GPU: name, compute capability, SM count, L2 and memory size, UUID, driver and CUDA
    runtime versions, torch and triton versions. CPU: model, logical cores, affinity,
    Python and numpy versions (torch/triton versions too when installed, read from
    package metadata without importing them).
    """
    kind, index = parse_device(device)
    base: dict[str, Any] = {
        "device": f"{kind}:{index}" if kind == "cuda" else "cpu",
        "host_cpu": _cpu_model(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "triton": _version("triton"),
    }
    if kind == "cpu":
        base["cpu_cores"] = os.cpu_count()
        with contextlib.suppress(AttributeError):
            base["cpu_affinity"] = len(os.sched_getaffinity(0))
        base["platform"] = platform.platform()
        return base
    import torch

    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        raise InputError(
            f"CUDA device {index} is not available",
            where="device",
            fix="use device='cpu' or a visible CUDA device",
        )
    props = torch.cuda.get_device_properties(index)
    base.update(
        name=props.name,
        capability=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        l2_bytes=int(getattr(props, "L2_cache_size", 0)),
        memory_bytes=int(props.total_memory),
        uuid=str(getattr(props, "uuid", "")),
        cuda_runtime=torch.version.cuda,
    )
    handle = _nvml_handle(index)
    if handle is not None:
        import pynvml

        with contextlib.suppress(Exception):
            base["driver"] = pynvml.nvmlSystemGetDriverVersion()
        with contextlib.suppress(Exception):
            base["cuda_driver"] = pynvml.nvmlSystemGetCudaDriverVersion()
    return base
