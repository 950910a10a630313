"""``tools/import_check.py``: one call imports an upstream folder and validates every task.

The lead runs it on the GPU machine, where only the evaluator's dependencies are
installed, so it must not import duckdb or polars.
"""

from __future__ import annotations

import importlib.util
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


# Upstream level 1's BatchNorm as its file is written: a copy of the input passes.
BATCHNORM = (
    Path(__file__).resolve().parent / "fixtures/kernelbench_rand_upstream/33_BatchNorm.py"
).read_text()


def test_jobs_validate_at_once_and_failures_run_again_alone(tmp_path: Path) -> None:
    """``--jobs 2``: every task still gets its row and time; a failing one (upstream's
    BatchNorm: with fresh running statistics it returns its input, so a copy passes) is
    validated once more alone, with what it got under load kept beside."""
    level = tmp_path / "level1"
    level.mkdir()
    (level / "33_BatchNorm.py").write_text(BATCHNORM)
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
    norm = rows["33_BatchNorm.py"]
    assert norm["result"] == "fail" and "null_input_copy" in norm["why"]
    assert norm["rerun"]["result"] == "fail" and "null_input_copy" in norm["rerun"]["why"]
    assert all(r["seconds"] > 0 for r in rows.values())
    assert "FAIL  33_BatchNorm.py (again alone)" in done.stdout
    assert "FAIL  33_BatchNorm.py under load, to be validated alone" in done.stdout


def test_resume_keeps_finished_rows_and_validates_the_rest(tmp_path: Path) -> None:
    """A check cut short (a device call's time limit) continues where it stopped: rows
    that have a result are kept as they are; the others are validated, a row that failed
    under load first and alone, with what it got under load kept beside."""
    level = tmp_path / "level1"
    level.mkdir()
    names = ["17_Matmul_with_transposed_B.py", "80_conv_dilated_padded_strided.py"]
    for name in names:
        (level / name).write_text((UPSTREAM / "level1" / name).read_text())
    out = tmp_path / "rows.json"
    earlier = {
        "problem": names[0],
        "import": "imported",
        "result": "pass",
        "why": "",
        "seconds": 7.5,
    }
    loaded = {"problem": names[1], "import": "imported", "result": "fail under load",
              "why": "timing_noise: A/A speedup 0.71", "seconds": 300.0}  # fmt: skip
    out.write_text(json.dumps([earlier, loaded]))
    done = subprocess.run(
        [sys.executable, "-c", BLOCK, "kernelbench", str(level), "--device", "cpu", "--quick",
         "--resume", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["problem"]: r for r in json.loads(out.read_text())}
    assert rows[names[0]] == earlier
    assert rows[names[1]]["result"] == "pass" and rows[names[1]]["seconds"] < 300.0
    assert rows[names[1]]["rerun"] == {"result": "fail", "why": "timing_noise: A/A speedup 0.71"}
    assert f"PASS  {names[0]}" not in done.stdout and f"PASS  {names[1]}" in done.stdout
    out.write_text("{not json")
    bad = subprocess.run(
        [sys.executable, "-c", BLOCK, "kernelbench", str(level), "--device", "cpu", "--quick",
         "--resume", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert bad.returncode != 0 and f"--resume: {out} is not the JSON rows" in bad.stderr


def test_the_summary_gives_the_noop_speedups_over_the_tasks_timed() -> None:
    """What the acceptance of an imported suite asks: noop at 1.00 +/- 0.02."""
    spec = importlib.util.spec_from_file_location(
        "import_check", REPO / "tools" / "import_check.py"
    )
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    aa = "A/A speedup {} (band 1±0.05); CI covers 1 on 1/1 shape(s)"
    rows = [{"problem": str(v), "aa": aa.format(v)} for v in ("0.968", "1.000", "1.012")]
    rows.append({"problem": "refused", "result": "refused"})
    assert tool.aa_summary(rows) == (
        "A/A (noop) over 3 tasks: 0.968-1.012, median 1.000; within 1 +/- 0.02: 2"
    )
    assert tool.aa_summary(rows[3:]) == ""
