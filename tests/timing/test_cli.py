"""``aka bench timing`` at the CLI boundary: help, bad input as messages, CPU run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _aka(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "aka.cli", "bench", "timing", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def test_help_names_the_options():
    out = _aka("--help")
    assert out.returncode == 0
    assert "--processes" in out.stdout and "--format" in out.stdout


def test_csv_is_refused_with_a_fix():
    out = _aka("--format", "csv", "--device", "cpu")
    assert out.returncode == 2
    assert "fix:" in out.stderr and "Traceback" not in out.stderr


def test_a_missing_gpu_is_a_message_not_a_traceback():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    out = _aka("--device", "cuda")
    assert out.returncode == 2
    assert "--device" in out.stderr and "Traceback" not in out.stderr


def test_cpu_run_prints_json():
    out = _aka(
        "--device", "cpu", "--processes", "1", "--rounds", "1", "--max-time-s", "0.2", "-f", "json"
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["meta"]["processes"] == 1 and len(report["kernels"]) == 2
