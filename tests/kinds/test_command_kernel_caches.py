"""A command-driven task's arms keep their kernels, and their autotuning, by their code.

Triton autotunes a kernel afresh in every process unless told to keep the result, so
each performance run of an imported AgentKernelArena task could time another config,
picked under whatever load that moment had: A/A runs of the same code then differ by
more than the kernels do. Each arm's commands get kernel caches named by the digest of
its code as laid out (before any command writes into its folder), with Triton's
autotuning results kept there: every run of that code, in this evaluation and later
ones, shares them, and code that differs never does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from aka.eval import _warm
from aka.kind_specs import CommandSpec
from aka.kinds._command import run_commands

# Each command appends what it was given to a log one level up (outside the arm's code),
# and the compile command leaves a build product behind, as real ones do.
SEEN = """import json, os, pathlib, sys
step = sys.argv[1]
here = pathlib.Path.cwd()
keys = ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "TRITON_CACHE_AUTOTUNING")
with open(here.parent / "seen.jsonl", "a") as f:
    f.write(json.dumps({"arm": here.name, "step": step, **{k: os.environ.get(k) for k in keys}}) + "\\n")
if step == "compile":
    (here / "build").mkdir(exist_ok=True)
    (here / "build" / "kernel.bin").write_bytes(os.urandom(16))
if step == "performance":
    (here / "build").mkdir(exist_ok=True)
    json.dump([{"test_case_id": "a", "execution_time_ms": 1.0}],
              open(here / "build" / "performance_report.json", "w"))
"""


@pytest.fixture(autouse=True)
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setattr(_warm, "CACHE_ROOT", root)
    return root


def _evaluation(where: Path, kernel: str, candidate: str) -> list[dict[str, str | None]]:
    where.mkdir()
    base, cand = where / "base", where / "cand"
    for folder, text in ((base, kernel), (cand, candidate)):
        folder.mkdir()
        (folder / "seen.py").write_text(SEEN)
        (folder / "kernel.py").write_text(text)
    py = f"{sys.executable} seen.py"
    spec = CommandSpec(compile=f"{py} compile", correctness=f"{py} correctness",
                       performance=f"{py} performance")  # fmt: skip
    out = run_commands(spec, base=base, cand=cand, device="cpu", time=True, rounds=3)
    assert out["error"] is None and out["correct"] and out["timing"], out
    return [json.loads(line) for line in (where / "seen.jsonl").read_text().splitlines()]


def _dirs(seen: list[dict[str, str | None]], arm: str) -> set[str | None]:
    return {s["TRITON_CACHE_DIR"] for s in seen if s["arm"] == arm}


def test_every_run_of_an_arm_shares_one_cache_with_autotuning_kept(
    tmp_path: Path, cache_root: Path
) -> None:
    seen = _evaluation(tmp_path / "one", "KERNEL = 1\n", "KERNEL = 2\n")
    steps = {(s["arm"], s["step"]) for s in seen}
    assert ("cand", "compile") in steps and ("base", "performance") in steps
    assert all(s["TRITON_CACHE_AUTOTUNING"] == "1" for s in seen)
    (base,) = _dirs(seen, "base")  # compile and every round, though compile wrote files
    (cand,) = _dirs(seen, "cand")
    assert base != cand  # a candidate never writes, nor reads, the baseline's
    for folder in (base, cand):
        assert folder is not None and Path(folder).parent.parent == cache_root / "kernels"
    assert {s["TORCH_EXTENSIONS_DIR"] for s in seen if s["arm"] == "cand"} == {
        str(Path(cand).parent / "torch")
    }


def test_the_same_code_shares_its_cache_across_arms_and_evaluations(tmp_path: Path) -> None:
    """An A/A control (the candidate is the baseline's code) times one autotuned config
    in both arms, and so does a later evaluation of the same baseline."""
    aa = _evaluation(tmp_path / "aa", "KERNEL = 1\n", "KERNEL = 1\n")
    assert _dirs(aa, "base") == _dirs(aa, "cand")
    later = _evaluation(tmp_path / "later", "KERNEL = 1\n", "KERNEL = 3\n")
    assert _dirs(later, "base") == _dirs(aa, "base")
    assert _dirs(later, "cand") != _dirs(aa, "cand")
