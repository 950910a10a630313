"""Helpers for arena tests: write configs, read reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write_config(
    tmp: Path,
    tasks_root: Path,
    *,
    arms: list[dict[str, Any]] | None = None,
    name: str = "run.yaml",
    **extra: Any,
) -> Path:
    """A CPU run config over the fixture tasks with fast timing."""
    cfg: dict[str, Any] = {
        "label": "t",
        "tasks": ["torch/ops/affine"],
        "tasks_root": str(tasks_root),
        "arms": arms or [{"name": "baseline", "agent": "noop"}],
        "device": "cpu",
        "timing": {"max_time_s": 0.2, "min_samples": 5},
    }
    cfg.update(extra)
    path = tmp / name
    path.write_text(yaml.safe_dump(cfg))
    return path
