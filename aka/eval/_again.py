"""The candidate timed once more in a fresh process, and judged as the first process was.

Two suspicions are settled by timing the candidate again: a baseline that ran slower
beside the candidate than alone (:func:`aka.eval._alone.rebase_slowed`) and timed calls
that look like replays (:func:`aka.eval._alone.settle_replay`). Either way the lower of
the two speedups is kept, on the view that a candidate cannot make the second timing
slower than honest. But it can tell that process from the first: it makes timed calls
only, no checked ones. A candidate that slowed the baseline beyond the slack in the
first process and, in the second, left it alone and returned garbage at once made the
second speedup the higher, so the lower was the forged one; with that process's
outputs never checked and its findings dropped, it scored correct with no flag.

So the second process is judged as the first is: its audited timed outputs go to a
checker (a wrong one is ``timed_output_wrong``), and its tripwires, the sealed core's
findings, the parent's (a tampered channel, a process left behind, samples its clock
cannot hold, work on a side stream), the forbidden operators it ran and the native code
it loaded are the evaluation's own. Any of them fails the evaluation; the second timing
counts only when there are none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aka.eval import _foreign, _native, _pipeline, _plan, _sites, _spares
from aka.eval._judge import forbidden_ops, parent_flags, record_flags, timing_results
from aka.eval._outputs import output_dir
from aka.eval._requests import candidate_request, checker_request
from aka.eval._wire import CheckerReport
from aka.eval._workers import Workers

__all__ = ["timed_again"]

Flags = list[dict[str, str]]


def timed_again(
    job: _pipeline.Job,
    root: Path,
    workers: Workers,
    name: str,
    fingerprint: dict[str, Any],
    site_flags: Callable[[list[str]], Flags],
) -> tuple[list[dict[str, Any]], Flags]:
    """``(raw timing items, flags)`` of the candidate timed once more in a process of its
    own, named ``name`` (no items when the process failed; the caller then keeps what it
    had). ``fingerprint``: the device as the evaluation's checker read it, for items
    that may stand in the verdict. ``site_flags``: ``forbidden_api`` for the forbidden
    calls task code made for the candidate (:func:`aka.eval._alone.task_site_flags`)."""
    native = str(_native.ensure_built(job.device))
    scratch = root / "scratch"
    scratch.mkdir(exist_ok=True)
    with output_dir(root) as out:
        request = candidate_request(job, root, out, native, host_gate=workers.switches.host_gate)
        run, assembled = _pipeline._sealed(job, request, out / name, cwd=scratch,
                                           stages=("timing",), workers=workers)  # fmt: skip
        records = [{**r, "file": f"{name}/{r['file']}" if r.get("file") else None}
                   for r in assembled["records"]]  # fmt: skip
        checked = _checked(job, root, out, scratch, records, workers)
    found: Flags = [*run.flags, *assembled["flags"], *checked.flags]
    found += record_flags(records, checked.results or [{} for _ in records], ", timed again")
    plain, sites = _sites.split(assembled["ops"])
    found += forbidden_ops(job.forbidden, plain, strict=bool(_pipeline.job_allowed(job)))
    found += site_flags(sites)
    found += _foreign.flags(job.backend, assembled["code"], _foreign.writable_roots(),
                            gpu=job.device.startswith("cuda"), env=_foreign.environment(),
                            own=root)  # fmt: skip
    found += _plan.thread_flags(assembled["threads"], _pipeline.native_backend(job.backend))[0]
    if assembled["error"] or run.error or not assembled["timing"]:
        return [], found
    items = [dict(item) for item in assembled["timing"]]
    for item in items:
        item.setdefault("fingerprint", dict(fingerprint))
    # the parent's clock and the side-stream check, as for the first timing (no work
    # estimates here: the speed of light was the first timing's to judge)
    found += parent_flags(job, timing_results(job, items), run.marks, [])
    return items, found


def _checked(job: _pipeline.Job, root: Path, out: Path, scratch: Path,
             records: list[dict[str, Any]], workers: Workers) -> CheckerReport:  # fmt: skip
    """The checker's report on the second process's audited outputs (none: nothing to
    check)."""
    if not records:
        return CheckerReport(results=[], flags=[], work=[])
    checker = workers.start(_spares.MODULES[1], cwd=scratch, device=job.device,
                            isolate=job.isolate_network)  # fmt: skip
    lease = checker.lease
    try:
        checker.send(dataclasses.replace(checker_request(job, root, out, records, None),
                                         timed_shapes=[]), scratch)  # fmt: skip
        return _pipeline.checker_report(checker.collect_trusted(job.timeout_s))
    finally:
        workers.done_with(checker, lease)
