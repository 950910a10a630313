"""Runs of the baseline alone, where no candidate code is: its clean timing and its sites.

Three things an evaluation judges need the task's baseline run in a candidate process of
its own, with the baseline's folder standing in for the candidate's: the timing that a
baseline slowed beside the candidate is checked against (:mod:`aka.eval._baseline_ref`),
the forbidden operators the task's own code calls when nothing of the candidate's is
there (:mod:`aka.eval._sites`), and the dtype of each output the baseline returns, which
a candidate's output must have. Each is kept per task for the evaluator's lifetime.

Why the baseline's dtypes: the checker compares values, and a reference often returns
float64 (it computes in float64 to judge precision), so it cannot say what the output's
dtype should be. The task's starting code can, run where candidate code never is: an
index kernel that writes int32 where the baseline returns int64, or float16 where the
baseline returns float32, has values the checker accepts and writes fewer bytes than the
task's contract asks of a drop-in replacement.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from aka.eval import (
    _again,
    _baseline_ref,
    _detect,
    _native,
    _ops,
    _pipeline,
    _replay,
    _requests,
    _sites,
)
from aka.eval._judge import timing_results
from aka.eval._once import Once
from aka.eval._outputs import output_dir
from aka.eval._workers import Workers

__all__ = ["Alone", "baseline_alone", "baseline_dtypes", "baseline_sites",
           "clean_baseline_timing", "device_of", "output_dtype_flags", "rebase_slowed",
           "settle_replay", "task_site_flags"]  # fmt: skip


def clean_baseline_timing(job: _pipeline.Job, root: Path, workers: Workers) -> list[dict[str, Any]]:
    """The baseline timed against itself in a candidate process of its own: the same plan's
    timing pairs, with the baseline's folder standing in for the candidate's, so no
    candidate code is ever imported there (:mod:`aka.eval._baseline_ref`)."""
    return _timing_only(job, root, workers, root / "base", "clean")


def _run_alone(job: _pipeline.Job, root: Path, workers: Workers, cand_dir: Path, name: str,
           stages: tuple[str, ...]) -> dict[str, Any]:  # fmt: skip
    """The assembly of one more sealed process over ``stages`` with ``cand_dir`` as the
    candidate (the baseline's folder: no candidate code is imported there)."""
    native = str(_native.ensure_built(job.device))
    scratch = root / "scratch"
    scratch.mkdir(exist_ok=True)
    with output_dir(root) as out:
        request = dataclasses.replace(
            _requests.candidate_request(job, root, out, native,
                                        host_gate=workers.switches.host_gate),
            cand_dir=str(cand_dir),
        )  # fmt: skip
        _, assembled = _pipeline._sealed(job, request, out / name, cwd=scratch, stages=stages,
                               workers=workers)  # fmt: skip
    return assembled


def _timing_only(
    job: _pipeline.Job,
    root: Path,
    workers: Workers,
    cand_dir: Path,
    name: str,
    fingerprint: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The timing pairs of one more sealed process that only times ``cand_dir`` as the
    candidate (no timing when it fails: its callers then fall back on what they had).

    ``fingerprint``: the device as the evaluation's checker read it, for pairs that may
    stand in the verdict (no checker runs after this process, and a pair without it made
    the attempt's device read as another one to ``aka compare``)."""
    return timing_results(job, _raw_timing(job, root, workers, cand_dir, name, fingerprint))


def _raw_timing(job: _pipeline.Job, root: Path, workers: Workers, cand_dir: Path, name: str,
                fingerprint: dict[str, Any] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The core's raw timing items of :func:`_timing_only` (none when it fails)."""
    assembled = _run_alone(job, root, workers, cand_dir, name, ("timing",))
    if assembled["error"] or not assembled["timing"]:
        return []
    for item in assembled["timing"]:
        item.setdefault("fingerprint", dict(fingerprint or {}))
    return list(assembled["timing"])


def _baseline_key(job: _pipeline.Job, root: Path, *parts: Any) -> str:
    """What a run of the baseline alone depends on: its sources, the reference, ``parts``,
    and where its inputs are drawn (with the drawer, ``make_inputs``'s operators run in
    another process, so the operators its calls run there are not the same)."""
    files = sorted(  # sources only: bytecode the processes left there differs per folder
        p for p in (root / "base").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    return _baseline_ref.clean_key(
        root, [*files, root / "task" / job.reference], job.entry_file, job.entry_symbol,
        job.shapes, job.dtypes, job.device, job.pass_shape, job.drawer, job.timer, *parts,
    )  # fmt: skip


DtypeKey = tuple[tuple[tuple[str, int], ...], str]
"""A case's shape (sorted items) and dtype."""

CONTIGUOUS = "contiguous"
"""Among a shape's expected output traits: the baseline's outputs were all contiguous."""


@dataclasses.dataclass(frozen=True)
class Alone:
    """What the baseline's checked calls show when they run alone, in a process where no
    candidate code is."""

    sites: frozenset[_sites.Site]
    """Where the task's own code calls forbidden operators (:mod:`aka.eval._sites`)."""
    outputs: dict[DtypeKey, frozenset[str]]
    """Per shape and dtype: each output's dtype, and :data:`CONTIGUOUS` when every one
    was contiguous."""


_alone: Once[Alone] = Once()


def baseline_alone(job: _pipeline.Job, root: Path, workers: Workers) -> Alone | None:
    """The baseline's checked calls in a process of their own, once per task and settings
    (``None`` when any of them failed, and then measured again by the next evaluation).

    Read as soon as the process ends, in the folder of the evaluation that ran it: the
    sites name files of that folder's trees, which a later evaluation's folder does not
    hold."""
    key = _baseline_key(job, root, "alone", sorted(_ops.forbidden_operators(job.forbidden)),
                        sorted(_pipeline.job_allowed(job)))  # fmt: skip

    def run() -> Alone | None:
        got = _run_alone(job, root, workers, root / "base", "alone", ("correctness",))
        if got["error"] or any(r.get("error") for r in got["records"]):
            return None
        _, raw = _sites.split(got["ops"])
        trees = _sites.trees(root / "base")
        parsed = (_sites.parse(text, trees, root / "task") for text in raw)
        return Alone(frozenset(s for s in parsed if s is not None), _outputs_of(got["records"]))

    return _alone.get(key, run)


def baseline_sites(
    job: _pipeline.Job, root: Path, workers: Workers
) -> frozenset[_sites.Site] | None:
    """Where the task's own code calls forbidden operators when the baseline runs alone
    (``None`` when it could not run)."""
    alone = baseline_alone(job, root, workers)
    return alone.sites if alone else None


def baseline_dtypes(
    job: _pipeline.Job, root: Path, workers: Workers
) -> dict[DtypeKey, frozenset[str]] | None:
    """The outputs the baseline returns per shape and dtype (:attr:`Alone.outputs`;
    ``None`` when it could not run)."""
    alone = baseline_alone(job, root, workers)
    return alone.outputs if alone else None


def _dtype_key(rec: dict[str, Any]) -> DtypeKey:
    return tuple(sorted((rec.get("shape") or {}).items())), str(rec.get("dtype"))


def _outputs_of(records: list[dict[str, Any]]) -> dict[DtypeKey, frozenset[str]]:
    found: dict[DtypeKey, set[str]] = {}
    scattered: set[DtypeKey] = set()
    for rec in records:
        if rec.get("out_dtype"):
            found.setdefault(_dtype_key(rec), set()).add(str(rec["out_dtype"]))
        if rec.get("out_contiguous") is False:
            scattered.add(_dtype_key(rec))
    return {k: frozenset(v | ({CONTIGUOUS} if k not in scattered else set()))
            for k, v in found.items()}  # fmt: skip


def output_dtype_flags(
    job: _pipeline.Job, root: Path, records: list[dict[str, Any]], workers: Workers
) -> list[dict[str, str]]:
    """``output_dtype`` for each shape whose candidate output has a dtype the baseline's
    output of that shape and dtype does not, and ``output_layout`` for an output that is
    not contiguous where the baseline's are (a flat copy returned through a transposed
    view: the core's save, outside every timed window, then did the kernel's work).
    Nothing when the baseline could not run."""
    expected = baseline_dtypes(job, root, workers)
    if expected is None:
        return []
    wrong: dict[tuple[str, str], list[dict[str, Any]]] = {}
    scattered: list[dict[str, Any]] = []
    for rec in records:
        want = expected.get(_dtype_key(rec))
        got = rec.get("out_dtype")
        if not want:
            continue
        dtypes = want - {CONTIGUOUS}
        if got and dtypes and str(got) not in dtypes:
            wrong.setdefault((str(got), "/".join(sorted(dtypes))), []).append(rec)
        if CONTIGUOUS in want and rec.get("out_contiguous") is False:
            scattered.append(rec)
    flags = [
        {"flag": "output_dtype", "evidence": f"the output is {got} where the task's baseline "
         f"returns {want} (shape {recs[0].get('shape')} {recs[0].get('dtype')}; "
         f"{len(recs)} of {len(records)} outputs)"}
        for (got, want), recs in wrong.items()
    ]  # fmt: skip
    if scattered:
        first = scattered[0]
        flags.append({"flag": "output_layout", "evidence": "the output is not contiguous where "
                      f"the task's baseline returns a contiguous tensor (shape {first.get('shape')} "
                      f"{first.get('dtype')}; {len(scattered)} of {len(records)} outputs)"})  # fmt: skip
    return flags


def task_site_flags(
    job: _pipeline.Job, root: Path, raw: list[str], workers: Workers
) -> list[dict[str, str]]:
    """``forbidden_api`` for every call task code made for the candidate that its baseline
    does not make (:mod:`aka.eval._sites`)."""
    if not raw:
        return []
    allowed = baseline_sites(job, root, workers)
    return [{"flag": "forbidden_api", "evidence": e}
            for e in _sites.charged(raw, root / "cand", allowed)]  # fmt: skip


def rebase_slowed(
    job: _pipeline.Job, root: Path, timing: list[dict[str, Any]], workers: Workers
) -> tuple[list[dict[str, Any]], list[str], list[dict[str, str]]]:
    """``(timing, notes, flags)``: ``timing`` with every shape whose baseline ran slower
    beside the candidate than in a process without it settled
    (:func:`aka.eval._detect.baseline_slowed`), and a note for each such shape: the
    candidate is timed once more in a fresh process, judged as the first was
    (:mod:`aka.eval._again`: ``flags`` holds what that process gave away), and a baseline
    slowed there too is replaced by the clean one (:func:`aka.eval._detect.settle_slowed`).
    With no clean timing to judge by, no timing at all: the candidate stays correct,
    without a speedup. Operators its baseline's calls ran that they never run alone are
    ``baseline_window`` (:func:`aka.eval._detect.baseline_window`)."""
    key = _baseline_key(job, root, job.timing)
    kind = "cuda" if job.device.startswith("cuda") else "cpu"
    slack, spread = _detect.BASELINE_SLACK[kind], _detect.BASELINE_SPREAD[kind]
    window: list[str] = []  # from the clean timing the last judgement used

    def judged(t: list[dict[str, Any]], clean: list[dict[str, Any]]) -> list[Any]:
        window[:] = _detect.baseline_window(t, clean)
        return _detect.baseline_slowed(t, clean, slack, spread)

    slowed = _baseline_ref.slowed(
        key, timing, lambda: clean_baseline_timing(job, root, workers), judged
    )
    if window:
        return [], [], [{"flag": "baseline_window", "evidence": e} for e in window]
    if slowed is None:
        return (
            [],
            [
                "no speedup: the baseline could not be timed in a process of its own, so a "
                "baseline slowed beside the candidate could not be ruled out"
            ],
            [],
        )
    if not slowed:
        return timing, [], []
    raw, flags = _again_for(job, root, workers, "again", timing)
    settled, notes = _detect.settle_slowed(timing, timing_results(job, raw), slowed, slack,
                                           spread)  # fmt: skip
    return settled, notes, flags


def settle_replay(
    job: _pipeline.Job,
    root: Path,
    timing: list[dict[str, Any]],
    raw: list[dict[str, Any]],
    workers: Workers,
) -> tuple[list[dict[str, Any]], list[str], list[str], list[dict[str, str]]]:
    """``(timing, evidence, notes, flags)``: the candidate's shapes that
    :func:`aka.eval._replay.suspects` finds in ``raw`` (the core's items behind ``timing``)
    settled by timing the candidate once more in a fresh process, judged as the first
    was (:mod:`aka.eval._again`: ``flags``) (:func:`aka.eval._replay.settle`):
    ``evidence`` for ``input_replay`` where the suspicion stands."""
    ratio = _replay.ratio_for(job.device)
    found = _replay.suspects(raw, ratio)
    if not found:
        return timing, [], [], []
    again, flags = _again_for(job, root, workers, "replay", timing)
    settled = _replay.settle(timing, found, raw, again, timing_results(job, again), ratio)
    return (*settled, flags)


def _again_for(job: _pipeline.Job, root: Path, workers: Workers, name: str,
               timing: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:  # fmt: skip
    """:func:`aka.eval._again.timed_again` for a settling timing of this evaluation."""
    return _again.timed_again(job, root, workers, name, device_of(timing),
                              lambda sites: task_site_flags(job, root, sites, workers))  # fmt: skip


def device_of(timing: list[dict[str, Any]]) -> dict[str, Any]:
    """The device fingerprint of the timed shapes (the first one's)."""
    for t in timing:
        fp = (t.get("pair") or {}).get("fingerprint")
        if fp:
            return dict(fp)
    return {}
