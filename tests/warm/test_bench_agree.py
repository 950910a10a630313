"""``aka bench agree``: the same candidates timed on several devices, and their spread."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aka.cli._bench_agree import agreement

REPO = Path(__file__).resolve().parents[2]
AFFINE = REPO / "tests" / "fixtures" / "tasks" / "torch" / "ops" / "affine"
H200 = {"name": "NVIDIA H200", "capability": "9.0", "sm_count": 132, "driver": "570.86"}


def _timed(speedup: float, base_s: float, cand: str = "baseline") -> dict[str, Any]:
    return {"task": "llm/softmax", "candidate": cand, "correct": True, "error": None,
            "shape": '{"M": 8}', "dtype": "float32", "speedup": speedup,
            "baseline_s": base_s, "candidate_s": base_s / speedup}  # fmt: skip


def test_spread_is_over_the_devices_that_timed_a_shape_and_names_the_others() -> None:
    failed = {"task": "llm/softmax", "candidate": "winner", "correct": False,
              "error": "timeout after 600 s"}  # fmt: skip
    devices = {
        "gpu0": {"fingerprint": {**H200, "uuid": "GPU-a"},
                 "rows": [_timed(1.00, 2e-5), _timed(1.30, 2e-5, "winner")]},
        "gpu1": {"fingerprint": {**H200, "uuid": "GPU-b"},
                 "rows": [_timed(1.02, 2.1e-5), _timed(1.26, 2.1e-5, "winner")]},
        "gpu2": {"fingerprint": {**H200, "uuid": "GPU-c"},
                 "rows": [_timed(0.98, 2.2e-5), failed, failed]},
    }  # fmt: skip
    report = agreement(devices)
    base, winner = report["rows"]
    assert base["speedup_spread"] == pytest.approx((1.02 - 0.98) / 1.00)
    assert base["baseline_spread"] == pytest.approx(0.2e-5 / 2.1e-5)
    assert winner["missing"] == ["gpu2"] and set(winner["speedup"]) == {"gpu0", "gpu1"}
    assert winner["speedup_spread"] == pytest.approx(0.04 / statistics.median([1.30, 1.26]))
    assert report["same_kind"]  # UUIDs name cards, not kinds
    assert report["within_1pct"] == 0 and report["compared"] == 2
    assert report["failed"] == [{"device": "gpu2", "task": "llm/softmax",
                                 "candidate": "winner", "error": "timeout after 600 s"}]  # fmt: skip
    devices["gpu2"]["fingerprint"] = {**H200, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-c"}
    assert not agreement(devices)["same_kind"]


def test_bench_agree_times_a_baseline_and_a_given_kernel_on_two_cpu_processes(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    winner = tmp_path / "winner"
    winner.mkdir()
    (winner / "kernel.py").write_text(
        "import torch\n\n\ndef affine(x: torch.Tensor) -> torch.Tensor:\n"
        "    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))\n"
    )
    args = ["bench", "agree", "--cpu", "2", "--task", str(AFFINE), "--max-time-s", "0.05"]
    res = cli(*args, "--candidate", f"{AFFINE}={winner}", "-f", "json")
    assert res.code == 0, res.err
    report = json.loads(res.out)
    assert list(report["devices"]) == ["cpu0", "cpu1"]
    assert all(fp["device"] == "cpu" and fp["host_cpu"] for fp in report["devices"].values())
    assert report["same_kind"] and report["failed"] == []
    assert {(r["candidate"], r["shape"]) for r in report["rows"]} == {
        ("baseline", '{"N": 4096}'),
        ("winner", '{"N": 4096}'),
    }
    for row in report["rows"]:
        s = list(row["speedup"].values())
        assert len(s) == 2 and row["missing"] == []
        assert row["speedup_spread"] == pytest.approx((max(s) - min(s)) / statistics.median(s))
    bad = cli(*args, "--candidate", f"{AFFINE}")
    assert bad.code != 0 and "--candidate" in bad.err and "TASK_DIR=SOURCE_DIR" in bad.err
