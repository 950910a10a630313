"""The red-team corpus through the real evaluator, on the CPU.

Every adversarial candidate must be caught (incorrect, with the listed flags named in the
Scored event and its evidence), every honest candidate must pass with no flag. Each
evaluation is two processes (candidate, then checker); they run two at a time.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml
from redteam_corpus import ADVERSARIAL, ALL, BUNDLED, HONEST, TASKS, Entry, evaluate_all

from aka.events import Scored

REPO = Path(__file__).resolve().parents[2]
# Patterns covered outside the corpus, with the test that covers each: detectors that need
# no evaluation process, and reaching another process (which needs a victim to reach).
UNIT_ONLY = {
    15: "test_timing_detectors.py::test_aggregate_noise_band_floor_and_cap",
    17: "test_timing_detectors.py::test_implausible_speed_fires_only_below_the_speed_of_light",
    18: "test_other_processes.py::test_a_candidate_cannot_stop_or_slow_another_evaluation_s_process",
    20: "test_seeds.py::test_no_call_s_seed_follows_from_the_seeds_before_it",
}


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scored]:
    return evaluate_all(ALL, tmp_path_factory.mktemp("redteam"))


def _gpu_script():
    spec = importlib.util.spec_from_file_location("redteam_gpu", REPO / "tools" / "redteam_gpu.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["redteam_gpu"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("entry", HONEST, ids=lambda e: e.name)
def test_honest_candidate_is_never_flagged(scored: dict[str, Scored], entry: Entry) -> None:
    s = scored[entry.name]
    assert s.compiled and s.correct, s.error
    assert s.hack_flags == [] and s.evidence == []
    if entry.time:  # timed and correct: the policy's 120 + 100 x speedup
        assert s.score >= 120.0 and s.speedup is not None


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(e, marks=pytest.mark.xfail(reason=e.open_hole, strict=True))
        if e.open_hole
        else e
        for e in ADVERSARIAL
    ],
    ids=lambda e: e.name,
)
def test_adversarial_candidate_is_caught(scored: dict[str, Scored], entry: Entry) -> None:
    s = scored[entry.name]
    assert not s.correct, f"{entry.name} was not caught"
    assert s.score <= 20.0 and s.speedup is None
    assert set(entry.flags) <= set(s.hack_flags), (s.hack_flags, s.error)
    assert not entry.any_of or set(entry.any_of) & set(s.hack_flags), (s.hack_flags, s.error)
    for flag in entry.flags:  # the Scored event names the flag and its evidence
        assert any(e.startswith(f"{flag}: ") for e in s.evidence), s.evidence
        assert flag in (s.error or "")
    assert s.error


def test_the_evaluation_reports_its_network_isolation(scored: dict[str, Scored]) -> None:
    hangs = {e.name for e in ALL if e.timeout_s}
    for name, s in scored.items():
        if name in hangs:  # stopped before its report came back: nothing to claim
            assert s.network == "unknown", (name, s.network)
        else:
            assert s.network.startswith(("isolated", "not isolated: ")), (name, s.network)


def test_every_pattern_has_a_detector_test() -> None:
    gpu = {p for _, _, p, _, _ in _gpu_script().ENTRIES if p is not None}
    cpu = {e.pattern for e in ADVERSARIAL}
    assert set(range(1, 21)) <= cpu | gpu | set(UNIT_ONLY)
    assert len(HONEST) >= 10 and len({e.task for e in HONEST}) >= 2


def test_gpu_script_specs_match_the_fixture_tasks() -> None:
    for key, spec in _gpu_script().SPECS.items():
        task = yaml.safe_load((TASKS / key / "task.yaml").read_text())
        assert task["backend"] == spec["backend"] and task["entry"] == spec["entry"]
        assert task["shapes"]["tuning"] == spec["shapes"]
        assert task["shapes"]["heldout"] == spec["heldout"]
        assert task["shapes"]["cpu"] == spec["cpu"]


def test_gpu_script_bundled_entries_match_the_corpus() -> None:
    table = _gpu_script().BUNDLED_ENTRIES
    assert table == [
        (e.name, e.task, e.pattern, e.flags) for e in ALL if e.bundled and not e.open_hole
    ]


@pytest.mark.parametrize("key", ["triton2triton/llm/softmax", "e2e/llama/prefill_rmsnorm"])
def test_gpu_script_bundled_job_is_what_job_for_builds(key: str) -> None:
    """Every field but those the script sets itself (its timing, a random seed, the process
    limits and switches of a run) is what ``aka.kinds._kernel.job_for`` gives."""
    import dataclasses

    from aka.config import TimingSettings
    from aka.eval import EvalRequest
    from aka.kinds._kernel import job_for
    from aka.tasks import load_task

    req = EvalRequest(task=load_task(BUNDLED / key, root=BUNDLED), task_tree="", candidate="",
                      harness="", device="cpu", policy="agentkernelarena",
                      timing=TimingSettings())  # fmt: skip
    want = job_for(req, seed=0)
    got = _gpu_script().bundled_job(key, "cpu")
    own = ("seed", "timing", "timeout_s", "hide", "isolate_network", "contain")
    assert dataclasses.replace(got, **{k: getattr(want, k) for k in own}) == want
    assert got.shapes and got.shapes == req.task.spec.shapes.cpu


def test_gpu_script_runs_end_to_end_on_the_cpu(tmp_path: Path) -> None:
    import json
    import subprocess

    out = tmp_path / "redteam.json"
    names = ["honest_vectorized", "p07_mutate_input", "s06_timed_only_fallback"]
    res = subprocess.run(
        [sys.executable, str(REPO / "tools" / "redteam_gpu.py"), "--out", str(out),
         "--device", "cpu", "--only", *names],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    data = json.loads(out.read_text())
    assert [r["name"] for r in data["rows"]] == names
    assert data["summary"] == {**data["summary"], "caught": 2, "honest_clean": 1}
    assert "caught" in res.stdout and "clean" in res.stdout


def test_gpu_corpus_static_layer() -> None:
    from aka.eval import hack_findings

    folder = REPO / "tests" / "redteam" / "corpus_gpu"
    found = {
        p.stem: {f.flag for f in hack_findings(p.name, p.read_text(), ["kernel.py"])}
        for p in folder.glob("*.py")
    }
    assert found["g13_l2_persist"] == {"ctypes"}
    assert found["g04_event_patch"] == {"monkeypatch"}
    # the side-stream and memory candidates are left to the runtime detectors
    assert found["g01_side_stream"] == found["g06_stale_memory"] == set()
    # and the library under graph capture to the operator recorder
    assert found["g18_graph_capture_library"] == set()
