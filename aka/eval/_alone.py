"""Runs of the baseline alone, where no candidate code is: its clean timing and its sites.

Two things an evaluation judges need the task's baseline run in a candidate process of
its own, with the baseline's folder standing in for the candidate's: the timing that a
baseline slowed beside the candidate is checked against (:mod:`aka.eval._baseline_ref`),
and the forbidden operators the task's own code calls when nothing of the candidate's is
there (:mod:`aka.eval._sites`). Each is kept per task for the evaluator's lifetime.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from aka.eval import _baseline_ref, _detect, _native, _ops, _pipeline, _sites
from aka.eval._judge import timing_results
from aka.eval._outputs import output_dir
from aka.eval._workers import Workers

__all__ = ["baseline_sites", "clean_baseline_timing", "device_of", "rebase_slowed",
           "task_site_flags"]  # fmt: skip


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
            _pipeline.candidate_request(job, root, out, native), cand_dir=str(cand_dir)
        )
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
    assembled = _run_alone(job, root, workers, cand_dir, name, ("timing",))
    if assembled["error"] or not assembled["timing"]:
        return []
    for item in assembled["timing"]:
        item.setdefault("fingerprint", dict(fingerprint or {}))
    return timing_results(job, assembled["timing"])


def _baseline_key(job: _pipeline.Job, root: Path, *parts: Any) -> str:
    """What a run of the baseline alone depends on: its sources, the reference, ``parts``."""
    files = sorted(  # sources only: bytecode the processes left there differs per folder
        p for p in (root / "base").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    return _baseline_ref.clean_key(
        root, [*files, root / "task" / job.reference], job.entry_file, job.entry_symbol,
        job.shapes, job.dtypes, job.device, job.pass_shape, *parts,
    )  # fmt: skip


def baseline_sites(
    job: _pipeline.Job, root: Path, workers: Workers
) -> frozenset[_sites.Site] | None:
    """Where the task's own code calls forbidden operators when the baseline runs alone: its
    checked calls in a process of their own (``None`` when any of them failed)."""
    assembled = _run_alone(job, root, workers, root / "base", "sites", ("correctness",))
    if assembled["error"] or any(r.get("error") for r in assembled["records"]):
        return None
    _, raw = _sites.split(assembled["ops"])
    parsed = (_sites.parse(text, _sites.trees(root / "base")) for text in raw)
    return frozenset(site for site in parsed if site is not None)


def task_site_flags(
    job: _pipeline.Job, root: Path, raw: list[str], workers: Workers
) -> list[dict[str, str]]:
    """``forbidden_api`` for every call task code made for the candidate that its baseline
    does not make (:mod:`aka.eval._sites`)."""
    if not raw:
        return []
    key = _baseline_key(job, root, "sites", sorted(_ops.forbidden_operators(job.forbidden)))
    allowed = _sites.allowed(key, lambda: baseline_sites(job, root, workers))
    return [{"flag": "forbidden_api", "evidence": e}
            for e in _sites.charged(raw, root / "cand", allowed)]  # fmt: skip


def rebase_slowed(
    job: _pipeline.Job, root: Path, timing: list[dict[str, Any]], workers: Workers
) -> tuple[list[dict[str, Any]], list[str]]:
    """``timing`` with every shape whose baseline ran slower beside the candidate than in
    a process without it settled (:func:`aka.eval._detect.baseline_slowed`), and a note for
    each such shape: the candidate is timed once more in a fresh process, and a baseline
    slowed there too is replaced by the clean one (:func:`aka.eval._detect.settle_slowed`).
    With no clean timing to judge by, no timing at all: the candidate stays correct,
    without a speedup."""
    key = _baseline_key(job, root, job.timing)
    slack = _detect.BASELINE_SLACK["cuda" if job.device.startswith("cuda") else "cpu"]
    slowed = _baseline_ref.slowed(
        key, timing, lambda: clean_baseline_timing(job, root, workers),
        lambda t, clean: _detect.baseline_slowed(t, clean, slack),
    )  # fmt: skip
    if slowed is None:
        return [], [
            "no speedup: the baseline could not be timed in a process of its own, so a "
            "baseline slowed beside the candidate could not be ruled out"
        ]
    if not slowed:
        return timing, []
    again = _timing_only(job, root, workers, root / "cand", "again", device_of(timing))
    return _detect.settle_slowed(timing, again, slowed, slack)


def device_of(timing: list[dict[str, Any]]) -> dict[str, Any]:
    """The device fingerprint of the timed shapes (the first one's)."""
    for t in timing:
        fp = (t.get("pair") or {}).get("fingerprint")
        if fp:
            return dict(fp)
    return {}
