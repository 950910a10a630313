"""Shared helpers for the end-to-end serving task tests: paths and module loading."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "tasks" / "e2e" / "llama"
CANDIDATES = REPO / "tools" / "e2e_candidates"
TASK_NAMES = sorted(p.parent.name for p in E2E.glob("*/task.yaml"))

# Triton kernels that run but compute the wrong thing: the starting kernel with the
# norm's weight dropped, the SiLU forgotten (a plain product of the halves), or the
# attention scores left unscaled by 1/sqrt(head size).
_BREAKS = {
    "prefill_rmsnorm": ("(x * inv_rms * w)", "(x * inv_rms)"),
    "decode_silu_mul": ("a / (1.0 + tl.exp(-a)) * b", "a * b"),
    "decode_attention": (") * scale", ")"),
}


def wrong_kernel(name: str) -> str:
    """The task's starting kernel source, broken as ``_BREAKS`` says."""
    source = (E2E / name / "source" / "kernel.py").read_text()
    old, new = _BREAKS[name]
    assert old in source, f"{name}: the starting kernel changed; update _BREAKS"
    return source.replace(old, new)


def load(path: Path) -> ModuleType:
    """Import ``path`` under a name unique to its location."""
    tag = hashlib.blake2s(str(path.resolve()).encode(), digest_size=6).hexdigest()
    name = f"_e2e_test_{path.stem}_{tag}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
