"""tools/e2e_bench.py on CPU: the record it writes and the numbers it derives.

The GPU run is the benchmark itself; on CPU (Triton interpreter) this checks the
plumbing: both arms correct, every pair measured through the engine, tokens per second
and Amdahl's prediction derived from the stored medians, and the kernel's calls recorded
from inside one forward.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from e2e_helpers import REPO
from hypothesis import given
from hypothesis import strategies as st


def _bench() -> ModuleType:
    path = REPO / "tools" / "e2e_bench.py"
    spec = importlib.util.spec_from_file_location("aka_tools_e2e_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _bench()


def test_tokens_per_call_counts_prompt_tokens_or_one_per_sequence() -> None:
    assert bench.tokens_per_call({"B": 8, "S": 512, "D": 64}) == 4096
    assert bench.tokens_per_call({"B": 32, "CTX": 1024, "D": 64}) == 32


@given(share=st.floats(0.0, 1.0), isolated=st.floats(1.0, 100.0))
def test_amdahl_lies_between_one_and_the_isolated_speedup(share: float, isolated: float) -> None:
    predicted = bench.amdahl(share, isolated)
    assert 1.0 - 1e-12 <= predicted <= isolated * (1 + 1e-12)


def test_cpu_run_writes_a_consistent_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "e2e.json"
    md = tmp_path / "e2e.md"
    args = ["prefill_rmsnorm", "--device", "cpu", "--max-time-s", "0.05"]
    code = bench.main([*args, "--out", str(out), "--md", str(md)])
    assert code == 0
    record = json.loads(out.read_text())
    (result,) = record["results"]
    shape = result["shape"]
    assert result["task"] == "e2e/llama/prefill_rmsnorm"
    assert {c["arm"] for c in result["correctness"]} == {"baseline", "candidate"}
    assert all(c["ok"] for c in result["correctness"])
    # Two RMSNorms per layer over every token, then the final one over the last tokens.
    rows = [shape["B"] * shape["S"]] * (2 * shape["L"]) + [shape["B"]]
    assert result["kernel"] == "rms_norm"
    assert result["kernel_calls"] == [[m, shape["D"]] for m in rows]
    pair = result["e2e"]["auto"]
    tokens = shape["B"] * shape["S"]
    assert pair["tokens_per_s"]["baseline"] == pytest.approx(tokens / pair["baseline"]["median_s"])
    assert pair["tokens_per_s"]["candidate"] == pytest.approx(
        tokens / pair["candidate"]["median_s"]
    )
    share = result["isolated"]["baseline"]["median_s"] / pair["baseline"]["median_s"]
    assert pair["kernel_share"] == pytest.approx(min(share, 1.0))
    assert "samples_s" not in pair["baseline"]
    assert "e2e/llama/prefill_rmsnorm" in capsys.readouterr().out
    assert md.read_text().startswith("| task | shape | mode |")


def test_a_task_without_a_candidate_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main(["no_such_task", "--device", "cpu", "--out", str(tmp_path / "x.json")])
    assert exc.value.code == 2


def test_a_failed_pair_is_recorded_and_rendered_not_raised() -> None:
    def boom(i: int) -> None:
        raise RuntimeError("capture failed")

    config = bench.TimingConfig(max_time_s=0.01, min_samples=3, warmup=1)
    failed = bench._pair(boom, boom, "cpu", config, 2)
    assert failed == {"error": "RuntimeError: capture failed"}
    result = {
        "task": "e2e/llama/x",
        "shape": {"B": 2, "S": 3},
        "correctness": [{"ok": True}],
        "e2e": {"auto": dict(failed)},
        "isolated": dict(failed),
    }
    bench._derive(result, result["shape"])
    table = bench.render({"results": [result]})
    assert "error: RuntimeError: capture failed" in table
