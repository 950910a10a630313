"""A failed A/A names a fix that applies to how the task is timed.

aka's engine times a kernel task, so its `timing_noise` fix is the engine's (shapes above
the timer's resolution, a longer `timing.max_time_s`). A command task's performance
command times itself and none of those settings reach it: its fix names the runner's
own loop instead.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from aka.kinds import _shared_checks
from aka.kinds._command import NOISE_FIX
from aka.kinds._protocol import FIXES, TaskValidation


def _noise_detail(monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> str:
    monkeypatch.setattr(_shared_checks, "baseline_tree", lambda cas, task: "tree")
    monkeypatch.setattr(_shared_checks, "aa_noise",
                        lambda ctx, eval_id: ("fail", "A/A speedup 0.861 (band 1±0.05)"))  # fmt: skip
    base = SimpleNamespace(compiled=True, correct=True, eval_id="e1", error=None)
    out = TaskValidation(key="t")
    ctx = SimpleNamespace(task=None, device="cuda", out=out, ledger=SimpleNamespace(cas=None),
                          judge=lambda *a, **k: base)  # fmt: skip
    _shared_checks.baseline_checks(ctx, what="x", **kwargs)  # type: ignore[arg-type]
    (check,) = [c for c in out.checks if c.name == "timing_noise"]
    assert check.status == "fail"
    return check.detail


def test_a_command_task_s_noise_names_the_runner_s_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    detail = _noise_detail(monkeypatch, noise_fix=NOISE_FIX)
    assert detail.endswith(f"(fix: {NOISE_FIX})")
    assert "timing.max_time_s" not in detail


def test_a_kernel_task_s_noise_names_the_engine_s_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    detail = _noise_detail(monkeypatch)
    assert detail.endswith(f"(fix: {FIXES['timing_noise']})")
