"""``tools/import_check.py``: one call imports an upstream folder and validates every task.

The lead runs it on the GPU machine, where only the evaluator's dependencies are
installed, so it must not import duckdb or polars.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = Path(__file__).resolve().parent / "fixtures" / "kernelbench_upstream"
BLOCK = (
    "import sys, runpy; sys.modules['duckdb'] = None; sys.modules['polars'] = None; "
    "sys.argv = ['import_check.py', *sys.argv[1:]]; "
    "runpy.run_path('tools/import_check.py', run_name='__main__')"
)


def test_one_row_per_file_with_result_and_why(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [sys.executable, "-c", BLOCK, "kernelbench", str(UPSTREAM / "level1"),
         "--device", "cpu", "--quick", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["problem"]: r for r in json.loads(out.read_text())}
    assert set(rows) == {p.name for p in (UPSTREAM / "level1").glob("*.py")}
    assert rows["17_Matmul_with_transposed_B.py"]["result"] == "pass"
    assert rows["80_conv_dilated_padded_strided.py"]["result"] == "pass"
    gpu = rows["50_conv_fixed_image.py"]
    assert gpu["import"] == "imported GPU-only" and gpu["result"] == "not run" and gpu["why"]
    refused = rows["99_literal_sizes_only.py"]
    assert refused["result"] == "refused" and "fix:" in refused["why"]
    assert "| 99_literal_sizes_only.py | refused |" in done.stdout  # the markdown table


RELU = (Path(__file__).resolve().parent / "fixtures/relu_upstream/19_ReLU.py").read_text()


def test_jobs_validate_at_once_and_failures_run_again_alone(tmp_path: Path) -> None:
    """``--jobs 2``: every task still gets its row and time; a failing one (upstream's
    ReLU: ``torch.rand`` inputs are non-negative, so a copy of the input passes) is
    validated once more alone, with what it got under load kept beside."""
    level = tmp_path / "level1"
    level.mkdir()
    (level / "19_ReLU.py").write_text(RELU)
    name = "17_Matmul_with_transposed_B.py"
    (level / name).write_text((UPSTREAM / "level1" / name).read_text())
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [sys.executable, "-c", BLOCK, "kernelbench", str(level), "--device", "cpu",
         "--quick", "--jobs", "2", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["problem"]: r for r in json.loads(out.read_text())}
    assert rows[name]["result"] == "pass" and "rerun" not in rows[name]
    relu = rows["19_ReLU.py"]
    assert relu["result"] == "fail" and "null_input_copy" in relu["why"]
    assert relu["rerun"]["result"] == "fail" and "null_input_copy" in relu["rerun"]["why"]
    assert all(r["seconds"] > 0 for r in rows.values())
    assert "FAIL  19_ReLU.py (again alone)" in done.stdout
