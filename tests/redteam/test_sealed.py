"""The sealed evaluator against adaptive candidates, through the real pipeline on the CPU.

Each candidate here attacks what the Python guards used to be alone in defending: the
timing objects and records reachable through frames, global modes that tell a checked
call from a timed one, files readable through C-level APIs, operators reached under
other names, processes that escape, calls that never return, outputs rewritten after
the fact, a baseline slowed from inside. What decides the verdict now lives in the
sealed core, the parent and the kernel's namespaces, so each attack must fail whatever
the tripwires see.
"""

from __future__ import annotations

import dataclasses
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from redteam_corpus import CORPUS, TASKS, scale_job

from aka.eval import _plan, _warm, current_workers
from aka.eval._pipeline import CHILD, Verdict, run_job


def _run(tmp_path: Path, name: str, **changes: object) -> Verdict:
    job, root = scale_job(tmp_path, (CORPUS / f"{name}.py").read_text(), **changes)
    return run_job(job, root)


def test_frame_walks_cannot_forge_a_speedup(tmp_path: Path) -> None:
    v = _run(tmp_path, "s01_frame_walk_timer")
    # The kernel is the baseline's own slow loop: whatever it rewrote, no sample moved.
    assert not v.timing or v.timing[0]["pair"]["speedup"] < 3.0, v.timing
    assert not v.correct or v.timing


def test_a_baseline_slowed_from_the_candidate_s_process_is_caught(tmp_path: Path) -> None:
    """s10 is correct and honestly fast, and on import slows the baseline (the ``torch``
    its module's globals name becomes a proxy whose every function runs fifty times). The
    baseline's modules are snapshotted as the harness loaded them, before the candidate
    is imported: the rebinding is named."""
    forged = _run(tmp_path, "s10_baseline_globals")
    assert not forged.correct and "task_code_patched" in forged.flags, forged.flags
    assert any("kernel.py:torch" in e for e in forged.evidence), forged.evidence


def test_a_baseline_slowed_in_the_first_process_only_is_caught(tmp_path: Path) -> None:
    """s11 slows the baseline as s10 does, but only in the first process that imports it
    (a marker folder in its kernel cache tells it which), so that a second timing would
    see a clean baseline; the first process already names the rebinding."""
    # A tree of its own: the marker it leaves in its kernel cache would outlive this test.
    src = (CORPUS / "s11_baseline_slowed_once.py").read_text() + f"\n# {os.urandom(8).hex()}\n"
    job, root = scale_job(tmp_path, src)
    forged = run_job(job, root)
    assert not forged.correct and "task_code_patched" in forged.flags, forged.flags


def _faster(timing: list[dict[str, Any]], factor: float) -> list[dict[str, Any]]:
    """``timing`` with every time of both arms of each pair divided by ``factor``."""

    def arm(a: dict[str, Any]) -> dict[str, Any]:
        return {k: v / factor if k.endswith("_s") and isinstance(v, float) else v
                for k, v in a.items()}  # fmt: skip

    return [{**t, "pair": {**t["pair"], "baseline": arm(t["pair"]["baseline"]),
                           "candidate": arm(t["pair"]["candidate"])}}
            for t in timing]  # fmt: skip


def test_a_baseline_slower_beside_the_candidate_than_alone_is_scored_against_the_latter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However the baseline came to run slower in the candidate's process (a way no
    tripwire names, or a kernel that leaves the machine slow for the call after it), a
    baseline slower there than in a process without candidate code, and again in a
    second process, is replaced by the clean timing. Here the clean timing is made four
    times faster than it ran, which is what a candidate slowing its baseline fourfold
    looks like to the parent."""
    from aka.eval import _alone, _baseline_ref
    from aka.eval._once import Once

    # The honest control, timed on a machine other tests load too: a burst of load that
    # slows its baseline in both of its processes but not in the clean one is corrected
    # just like a candidate's doing (the fail-closed direction), so it gets three tries,
    # each with a clean timing of its own; a rule that fires on honest code keeps firing.
    for attempt in range(3):
        monkeypatch.setattr(_baseline_ref, "_cache", Once())
        honest = _run(tmp_path / f"honest{attempt}", "honest_vectorized")
        if not any(n.startswith("baseline_slowed") for n in honest.notes):
            break
    monkeypatch.setattr(_baseline_ref, "_cache", Once())
    clean = _alone.clean_baseline_timing
    monkeypatch.setattr(_alone, "clean_baseline_timing", lambda *a: _faster(clean(*a), 4.0))
    forged = _run(tmp_path / "forged", "honest_vectorized")
    assert honest.correct and forged.correct, (honest.error, forged.error)
    (pair,) = [t["pair"] for t in forged.timing]
    assert pair["baseline_beside"]["median_s"] > 2 * pair["baseline"]["median_s"]
    assert pair["speedup"] < honest.timing[0]["pair"]["speedup"] / 2, (pair, honest.timing)
    assert any(n.startswith("baseline_slowed: shape") for n in forged.notes), forged.notes
    assert not any(n.startswith("baseline_slowed") for n in honest.notes), honest.notes


def test_without_a_clean_baseline_timing_there_is_no_speedup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check of a slowed baseline fails closed: when the baseline cannot be timed in a
    process of its own (here it never comes back), a correct candidate keeps its verdict
    but earns no speedup, and the note says why."""
    from aka.eval import _alone, _baseline_ref
    from aka.eval._once import Once

    monkeypatch.setattr(_baseline_ref, "_cache", Once())
    monkeypatch.setattr(_alone, "clean_baseline_timing", lambda *a: [])
    job, root = scale_job(tmp_path, (CORPUS / "honest_vectorized.py").read_text())
    v = run_job(job, root)
    assert v.correct and v.timing == [], (v.error, v.timing)
    assert any(n.startswith("no speedup: the baseline could not be timed") for n in v.notes)


def test_a_cache_of_outputs_keyed_on_repeated_inputs_is_caught(tmp_path: Path) -> None:
    """With inputs slow to generate, timing draws them from a pool of eight sets, which
    repeat. s05 serves a seen set a copy of its cached (right) output and computes a new
    one the slow way; about one round in four gets a set never seen, and the candidate's
    speed there gives it away. An honest kernel timed the same way is not flagged."""
    pool = {"target_rel_ci": 0.05, "max_time_s": 0.4, "min_samples": 40, "fresh_max_s": 0.0}
    job, root = scale_job(tmp_path / "cache", (CORPUS / "s05_pool_replay.py").read_text())
    cached = run_job(dataclasses.replace(job, timing=pool), root)
    assert "input_replay" in cached.flags and not cached.correct, (cached.flags, cached.error)
    assert any("on sets it had not seen" in e for e in cached.evidence), cached.evidence
    assert any("timed again in a fresh process" in e for e in cached.evidence)  # both timings
    job, root = scale_job(tmp_path / "honest", (CORPUS / "honest_vectorized.py").read_text())
    honest = run_job(dataclasses.replace(job, timing=pool), root)
    assert honest.correct and honest.flags == [], (honest.flags, honest.error)
    assert "a new set in about 1 round in 4" in honest.timing[0]["pair"]["method"]


def test_wrong_answers_between_the_first_and_the_last_timed_rounds_are_caught(
    tmp_path: Path,
) -> None:
    """s10 answers right for its first 220 calls and after its 1000th, zeros in between.
    A pair of over a thousand rounds (min_samples) is judged on rounds drawn from all of
    them alike, so about eight in ten of its audits fall where the answers are wrong."""
    rounds = {"target_rel_ci": 1e-6, "max_time_s": 0.01, "min_samples": 1100}
    job, root = scale_job(tmp_path, (CORPUS / "s10_late_rounds.py").read_text())
    v = run_job(dataclasses.replace(job, timing=rounds), root)
    assert not v.correct and "timed_output_wrong" in v.flags, (v.flags, v.error)
    job, root = scale_job(tmp_path / "honest", (CORPUS / "honest_vectorized.py").read_text())
    honest = run_job(dataclasses.replace(job, timing=rounds), root)
    assert honest.correct and honest.flags == [], (honest.flags, honest.error)


def test_a_short_pair_is_judged_on_every_output_its_reservoir_holds(tmp_path: Path) -> None:
    """Twenty rounds: every kept output and the last call are judged (at one round in ten,
    two and the last), so a kernel wrong in two timed calls of three is caught."""
    from collections import Counter

    from aka.eval._pipeline import run_processes

    rounds = {"target_rel_ci": 1e-6, "max_time_s": 5.0, "min_samples": 20, "max_samples": 20}
    job, root = scale_job(tmp_path / "h", (CORPUS / "honest_vectorized.py").read_text())
    _, assembled, _ = run_processes(dataclasses.replace(job, timing=rounds), root)
    kinds = Counter(r["kind"] for r in assembled["records"])
    assert kinds["timed"] == _plan.AUDIT_MAX + 1, kinds
    job, root = scale_job(tmp_path / "c", (CORPUS / "s10_most_rounds_wrong.py").read_text())
    v = run_job(dataclasses.replace(job, timing=rounds), root)
    assert not v.correct and "timed_output_wrong" in v.flags, (v.flags, v.error)
    assert all(c["ok"] for c in v.cases), v.cases  # every checked call was right


def test_a_candidate_writes_nothing_another_process_reads(tmp_path: Path) -> None:
    """s12 tries to make a folder in site-packages, the environment, aka's caches, the
    home folder, /dev and the evaluation's folders; outside its private ones, every mount
    is read-only, so none is there afterwards (and its kernel is still judged)."""
    import site
    import sys

    job, root = scale_job(tmp_path, (CORPUS / "s12_write_what_others_read.py").read_text())
    home = Path.home()
    places = [*map(Path, site.getsitepackages()), Path(sys.prefix), home, home / ".cache/aka",
              home / ".cache/aka/native", home / ".triton", Path("/dev"), root,
              *(root / n for n in ("task", "base", "cand", "scratch"))]  # fmt: skip
    try:
        v = run_job(job, root)
        left = [str(p) for p in places if (p / "aka-s12-probe").exists()]
    finally:
        for p in places:
            if (p / "aka-s12-probe").is_dir():
                (p / "aka-s12-probe").rmdir()
    assert left == [], left
    assert v.correct, v.error
    assert any("read-only" in n for n in v.notes), v.notes


def test_pruning_what_it_can_reach_does_not_hide_a_wrong_answer(tmp_path: Path) -> None:
    v = _run(tmp_path, "s02_prune_records")
    assert not v.correct
    assert v.cases and not any(c["ok"] for c in v.cases)


def test_no_global_mode_tells_a_checked_call_from_a_timed_one(tmp_path: Path) -> None:
    v = _run(tmp_path, "s03_watched_modes")
    assert not v.correct, v.error
    assert "timed_output_wrong" in v.flags or not all(c["ok"] for c in v.cases)


def test_the_task_spec_is_not_readable_from_the_candidate(tmp_path: Path) -> None:
    v = _run(tmp_path, "s04_read_task_folder")
    # It answers right only when it could read nothing (its attempts trip the audit hook,
    # which is why the verdict is not asserted: the outputs say what it could read).
    assert v.cases and all(c["ok"] for c in v.cases), v.cases
    assert any("contained (" in n for n in v.notes), v.notes


@pytest.mark.parametrize("name", ["s04_proc_cwd_scandir", "s04_ctypes_libc"])
def test_the_spec_is_unreadable_through_the_working_folder_and_libc(
    tmp_path: Path, name: str
) -> None:
    """Each of these computes y = a x + b only from coefficients it read in the spec (and
    answers zeros otherwise): a right case means the spec was readable. The first read it
    through ``/proc/self/cwd/..`` while the working folder still pointed into the tree as it
    was before the hiding mounts."""
    v = _run(tmp_path, name, hide=(str(TASKS),))
    assert v.cases and not any(c["ok"] for c in v.cases), v.cases


def test_a_forbidden_operator_is_caught_under_any_name(tmp_path: Path) -> None:
    v = _run(tmp_path, "s06_forbidden_alias", forbidden=["torch.mul"])
    assert "forbidden_api" in v.flags and not v.correct
    assert any("aten::mul" in e for e in v.evidence), v.evidence


def _escape(tmp_path: Path, src: str) -> Path:
    """Evaluate ``src``; where its processes would leave ``escaped``: the candidate tree's
    kernel cache, the one folder they may write that the host sees after they end."""
    if not current_workers().warm:
        pytest.skip("only warm workers give a candidate tree a kernel cache on the host")
    job, root = scale_job(tmp_path, src)
    marker = Path(_warm.cache_env(CHILD, root / "cand")["TRITON_CACHE_DIR"]) / "escaped"
    marker.unlink(missing_ok=True)  # an earlier run's, of the same tree
    run_job(job, root)
    return marker


def test_an_escaping_daemon_dies_with_the_evaluation(tmp_path: Path) -> None:
    marker = _escape(tmp_path, (CORPUS / "s07_escape_daemon.py").read_text())
    time.sleep(6.0)  # the daemon would have written by now
    assert not marker.exists(), "a process outlived the evaluation"


ESCAPES = ["s07_popen_session", "s07_multiprocessing", "s07_posix_spawn", "s07_ctypes_fork"]
# Writes its marker at once, from the call itself: shows a marker would be seen.
MARKER_NOW = """import os

def scale(x):
    with open(os.path.join(os.environ["TRITON_CACHE_DIR"], "escaped"), "w") as f:
        f.write("now")
    return x * 2 + 1
"""


def test_no_way_of_escaping_outlives_the_evaluation(tmp_path: Path) -> None:
    """A new session, a forked non-daemon worker, a spawned shell, libc's fork: each
    descendant would write ``escaped`` into the candidate tree's kernel cache 8 s later;
    the reaper and the PID namespace must have killed it."""

    def run(name: str) -> Path:
        src = MARKER_NOW if name == "now" else (CORPUS / f"{name}.py").read_text()
        return _escape(tmp_path / name, src)

    with ThreadPoolExecutor(max_workers=2) as pool:
        markers = dict(zip(["now", *ESCAPES], pool.map(run, ["now", *ESCAPES]), strict=True))
    time.sleep(10.0)  # every daemon would have written by now
    try:
        assert markers["now"].exists()
        assert [n for n, m in markers.items() if n != "now" and m.exists()] == []
    finally:
        for marker in markers.values():
            marker.unlink(missing_ok=True)


@pytest.mark.parametrize("name", ["s08_hang", "s08_signal_pause"])
def test_a_hang_is_stopped_at_the_evaluations_limit(tmp_path: Path, name: str) -> None:
    """``s08_signal_pause`` ignores SIGTERM and every other catchable signal."""
    t0 = time.monotonic()
    v = _run(tmp_path, name, timeout_s=20.0)
    assert time.monotonic() - t0 < 60.0
    assert not v.correct and "exceeded 20 s" in (v.error or ""), v.error


def test_outputs_rewritten_after_the_call_are_caught(tmp_path: Path) -> None:
    v = _run(tmp_path, "s09_output_tamper")
    assert not v.correct
    assert "output_tamper" in v.flags, (v.flags, v.error)


def _plan_of(n_shapes: int = 1) -> _plan.Plan:
    timing = {"target_rel_ci": 0.05, "max_time_s": 0.1, "min_samples": 5}
    shapes = [{"N": 8 * (i + 1)} for i in range(n_shapes)]
    return _plan.make_plan(shapes, ["float32"], seed=3, seeds=2, time=True, timing=timing)


def _frames(plan: _plan.Plan) -> list[dict[str, object]]:
    calls = [{"kind": "call", "nonce": c.nonce, "file": f"o{i}.bin", "digest": "0", "plain": True}
             for i, c in enumerate(plan.calls)]  # fmt: skip
    audits = [{"round": 5, "seed": 1}, {"round": 6, "seed": 2}]  # the round, the last call
    timing = [{"kind": "timing", "shape": k, "windows": [[1.0], [1.0]], "hosts": [[1.0], [1.0]],
               "rounds": 1, "audits": audits, "error": None}
              for k in range(len(plan.pairs))]  # fmt: skip
    return [*calls, *timing, {"kind": "core_done", "calls": len(calls), "error": None}]


def test_every_planned_call_must_come_back_exactly_once() -> None:
    plan = _plan_of()
    whole = _plan.assemble(plan, _frames(plan))
    assert whole["flags"] == [] and whole["error"] is None
    cases = [r for r in whole["records"] if r["kind"] == "case"]
    assert len(cases) == len(plan.calls) and len(whole["twins"]) == len(plan.calls) // 2

    frames = _frames(plan)
    dropped = [f for f in frames if f.get("nonce") != plan.calls[1].nonce]
    out = _plan.assemble(plan, dropped)
    assert any(r.get("error") == "no record came back for this call" for r in out["records"])

    doubled = _plan.assemble(plan, [frames[0], *frames])
    assert any(f["flag"] == "records_incomplete" for f in doubled["flags"])

    stray = _plan.assemble(plan, [{"kind": "call", "nonce": "feedfacefeedface"}, *frames])
    assert any("never asked for" in f["evidence"] for f in stray["flags"])

    no_end = _plan.assemble(plan, frames[:-1])
    assert no_end["error"] == "the evaluation process ended before its plan was done"


def test_a_second_timing_record_for_a_pair_is_tampering() -> None:
    """A red-team fork read the channel key from its copy of the process and wrote a timing
    record of its own for a pair ahead of the core's: the first one per pair used to win
    silently (now a fork finds the vault zeroed, and a second record is named)."""
    plan = _plan_of()
    frames = _frames(plan)
    timing = next(f for f in frames if f["kind"] == "timing")
    forged = {**timing, "windows": [[1.0], [0.01]]}
    out = _plan.assemble(plan, [forged, *frames])
    assert [f["flag"] for f in out["flags"]] == ["result_channel_tamper"], out["flags"]
    assert "two timing records for shape 0" in out["flags"][0]["evidence"]


def test_every_timed_round_s_audit_must_come_back_once() -> None:
    """The audits wait in memory a raw address reaches; the round count does not. Fewer
    audits than the reservoir held for the rounds, or one round twice, is an audit
    dropped or copied over one that failed (for 20 rounds: 8 from the reservoir, and the
    last call)."""
    plan = _plan_of()
    frames = _frames(plan)
    timing = next(f for f in frames if f["kind"] == "timing")
    timing["rounds"] = 20
    timing["audits"] = [{"round": r, "seed": r} for r in (3, 5, 8, 9, 12, 14, 17, 19, 21)]
    assert _plan.assemble(plan, frames)["flags"] == []
    timing["audits"] = timing["audits"][:-2]
    (short,) = _plan.assemble(plan, frames)["flags"]
    assert (
        short["flag"] == "records_incomplete"
        and "7 timed audits came back for 20 rounds, 9" in short["evidence"]
    )
    timing["audits"] += [{"round": 3, "seed": 3}] * 2
    (twice,) = _plan.assemble(plan, frames)["flags"]
    assert "audited twice" in twice["evidence"]
    timing["error"] = "the call raised"  # a pair that failed has its error instead
    assert not any(f["flag"] == "records_incomplete" for f in _plan.assemble(plan, frames)["flags"])


def test_the_plan_text_holds_every_call_and_pair() -> None:
    plan = _plan_of(n_shapes=2)
    text = plan.text()
    assert text.count("\nC ") + text.startswith("C ") == len(plan.calls)
    assert sum(line.startswith("P ") for line in text.splitlines()) == 2
    assert len({c.nonce for c in plan.calls}) == len(plan.calls)
    twins = {(c.seed, c.shape) for c in plan.calls}
    assert len(twins) * 2 == len(plan.calls)  # each case runs twice on the same inputs


def test_the_two_calls_of_a_case_run_over_different_poison() -> None:
    """Equal bytes would leave equal leftovers, and an output that reads memory it never
    wrote would pass as deterministic (one case in five did, with a NaN byte in both)."""
    for _ in range(50):
        plan = _plan_of(3)
        for i, call in enumerate(plan.calls):
            twin = plan.calls[call.twin]
            assert call.twin != i and twin.twin == i
            assert call.poison != twin.poison and call.poison in _plan.POISONS


@pytest.mark.parametrize("stage", ["correctness", "timing"])
def test_a_stage_plan_holds_only_that_stage(stage: str) -> None:
    timing = {"target_rel_ci": 0.05, "max_time_s": 0.1, "min_samples": 5}
    plan = _plan.make_plan([{"N": 8}], ["float32"], seed=1, seeds=1, time=True, timing=timing,
                           stages=(stage,))  # fmt: skip
    assert bool(plan.calls) == (stage == "correctness") and bool(plan.pairs) == (stage == "timing")


def test_forbidden_names_map_to_operators_not_plumbing() -> None:
    from aka.eval._ops import forbidden_operators

    ops = forbidden_operators(["torch.softmax", "torch.Tensor.copy_", "torch.matmul", "aten::mm"])
    assert {"aten::softmax", "aten::_softmax", "aten::matmul", "aten::mm"} <= ops
    assert "aten::copy_" not in ops  # data movement is every wrapper's; the name check keeps it


def test_python_operators_and_softmax_variants_are_the_operators_they_run() -> None:
    """``p >> 4`` runs ``aten::__rshift__`` (not the bitwise operator inside it), and
    ``torch._masked_softmax`` a softmax of its own: each must be among the operators the
    names a task forbids stand for, as torch records them."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from aka.eval._ops import forbidden_operators

    p = torch.arange(16, dtype=torch.int32)
    x = torch.randn(4, 8)
    mask = torch.zeros(4, 8, dtype=torch.bool)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _ = p >> 4
        _ = p & 15
        _ = x @ x.t()
        _ = torch._masked_softmax(x, mask)
    ran = {e.name for e in prof.events()}
    named = {
        "torch.Tensor.__rshift__": "aten::__rshift__",
        "torch.Tensor.__and__": "aten::__and__",
        "torch.Tensor.__matmul__": "aten::matmul",
        "torch.softmax": "aten::_masked_softmax",
    }
    for name, op in named.items():
        assert op in ran, sorted(ran)
        assert op in forbidden_operators([name]), name
    assert "aten::bitwise_right_shift" in forbidden_operators(["torch.Tensor.__rrshift__"])
    assert forbidden_operators(["torch.Tensor.__getitem__"]) == set()  # indexing: plumbing


def test_slow_input_generation_times_a_keyed_pick_of_fresh_sets(tmp_path: Path) -> None:
    """Where one generation costs more than the plan allows, each timed call gets one of
    eight fresh sets (recorded in the method), and the verdict and audits still hold."""
    timing = {"target_rel_ci": 0.05, "max_time_s": 0.2, "min_samples": 5, "fresh_max_s": 0.0}
    honest = _run(tmp_path / "h", "honest_vectorized", timing=timing)
    assert honest.correct and honest.timing, honest.error
    assert "keyed pick of 8 fresh sets" in honest.timing[0]["pair"]["method"]
    cheat = _run(tmp_path / "c", "s03_watched_modes", timing=timing)
    assert not cheat.correct


def test_the_core_says_where_each_timed_shape_s_time_went(tmp_path: Path) -> None:
    """Each timed shape holds the device alone: its timing record splits that time into
    drawing the inputs, the device's set-up, the warm-up, sampling and saving the audits,
    so a benchmark can say which part a faster stream must shrink."""
    job, root = scale_job(tmp_path, (CORPUS / "honest_vectorized.py").read_text(), time=True)
    v = run_job(job, root)
    assert v.correct and v.timing, (v.error, v.flags)
    for item in v.timing:
        phases = item["phases_s"]
        assert set(phases) == {"inputs", "setup", "warm_up", "sampling", "audits"}, phases
        assert min(phases.values()) >= 0 and phases["sampling"] > 0, phases
