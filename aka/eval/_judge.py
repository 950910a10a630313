"""The verdict's parts read from what the processes returned.

Twin calls and timed audits judged against the checker's results, the operators the
task forbids among those that ran, the parent's own detectors (clock consistency, side
streams, speed of light) and the timing statistics of the core's raw samples. Plain
functions over records: the processes are run by :mod:`aka.eval._pipeline`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aka.eval import _detect, _ops
from aka.eval._wire import CheckerReport

if TYPE_CHECKING:
    from aka.eval._pipeline import Job

__all__ = [
    "RECORD_FLAGS",
    "forbidden_ops",
    "judge_records",
    "parent_flags",
    "record_flags",
    "timing_results",
]


RECORD_FLAGS = {
    "timed": ("timed_output_wrong", "an output of the timed calls"),
}


def judge_records(
    records: list[dict[str, Any]],
    checked: CheckerReport,
    twins: list[tuple[int, int]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Case results from the checker, and flags for wrong outputs outside the cases.

    Twin calls (same inputs, different poison in freed memory) form one case, correct
    only if both are; if they disagree, or are both wrong with different bytes, the
    output depends on memory it never wrote (``uninitialized_read``). A wrong timed
    output is a flag only when every case passed: then the candidate answers correctly
    when checked and wrongly otherwise (replay, caching, branching on being timed).
    """
    results = checked.results or [{} for _ in records]
    flags = list(checked.flags)
    pair_of = {a: b for a, b in twins or []}
    second = set(pair_of.values())
    cases: list[dict[str, Any]] = []
    for i, (rec, res) in enumerate(zip(records, results, strict=True)):
        if rec["kind"] != "case" or i in second:
            continue
        ok, err = bool(res.get("ok")), res.get("error") or rec.get("error")
        if i in pair_of:
            j = pair_of[i]
            other, orec = results[j], records[j]
            both_bad = not ok and not other.get("ok")
            if ok != bool(other.get("ok")) or (
                both_bad and rec.get("digest") and orec.get("digest") != rec.get("digest")
            ):
                flags.append({"flag": "uninitialized_read", "evidence": f"shape {rec['shape']} "
                              f"{rec['dtype']}: two runs over differently poisoned memory differ"})  # fmt: skip
            ok = ok and bool(other.get("ok"))
            err = err or other.get("error") or orec.get("error")
        cases.append({"shape": rec["shape"], "dtype": rec["dtype"], "seed": rec["seed"], "ok": ok,
                      "max_abs_err": res.get("max_abs_err"), "error": None if ok else err})  # fmt: skip
    if cases and all(c["ok"] for c in cases):
        flags += record_flags(records, results)
    return cases, flags


def record_flags(records: list[dict[str, Any]], results: list[dict[str, Any]],
                 where: str = "") -> list[dict[str, str]]:  # fmt: skip
    """A flag for each wrong output of the records outside the cases (the timed calls'
    audits, :data:`RECORD_FLAGS`); ``where`` names the process in the evidence."""
    out = []
    for rec, res in zip(records, results, strict=True):
        if rec["kind"] in RECORD_FLAGS and not res.get("ok"):
            flag, what = RECORD_FLAGS[rec["kind"]]
            out.append({"flag": flag, "evidence": f"{what}{where}: {res.get('error')}"})
    return out


def forbidden_ops(forbidden: list[str], ops: list[str], strict: bool = False
                  ) -> list[dict[str, str]]:  # fmt: skip
    """``forbidden_api`` for every library operator that ran and that the task forbids;
    ``strict`` (``operators: plumbing``): the core reported only operators outside the
    task's allowed ones, and every one of them is charged."""
    listed = _ops.forbidden_operators(forbidden)
    ran = sorted(set(ops) if strict else set(ops) & listed)
    why = ", and this task's kernel may call the library for plumbing only (operators: plumbing)"
    return [{"flag": "forbidden_api",
             "evidence": f"the candidate ran {op}" + ("" if op in listed else why)}
            for op in ran[:8]]  # fmt: skip


def parent_flags(
    job: Job, timed: list[dict[str, Any]], marks: list[dict[str, Any]], work: list[Any]
) -> list[dict[str, str]]:
    """Detectors on the parent's side: clock consistency, side streams, speed of light."""
    core = [m for m in marks if m.get("origin") != "py"]  # Python cannot send these
    starts = {m["shape"]: m["t"] for m in core if m.get("name") == "timing_start"}
    ends = {m["shape"]: m["t"] for m in core if m.get("name") == "timing_end"}
    windows = [
        ends[k] - starts[k] if starts.get(k) is not None and ends.get(k) is not None else None
        for k in range(len(timed))
    ]
    ceilings = job.ceilings or _detect.ceilings_for(job.device)
    out = [
        {"flag": "timing_inconsistent", "evidence": e}
        for e in _detect.timing_inconsistent(timed, windows)
    ]
    out += [{"flag": "side_stream", "evidence": e} for e in _detect.side_stream(timed)]
    out += [
        {"flag": "implausible_speed", "evidence": e}
        for e in _detect.implausible_speed(timed, work, ceilings)
    ]
    return out


def timing_results(job: Job, raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per timed shape, the statistics of the core's raw samples (computed here)."""
    from aka.timing import TimingConfig, host_check, method, pair_from_samples

    known = {k: v for k, v in job.timing.items() if k in TimingConfig.__dataclass_fields__}
    cfg = TimingConfig(**{**known, "seed": job.seed})
    out = []
    for item in raw:
        f = item["raw"]
        windows = (list(f["windows"][0]), list(f["windows"][1]))
        hosts = (list(f["hosts"][0]), list(f["hosts"][1]))
        timer = str(f.get("timer"))
        pair = pair_from_samples(
            windows, hosts, cfg,
            method_text=method(cfg, timer=timer, flush_bytes=int(f.get("flush_bytes") or 0),
                               pre_spin_s=float(f.get("pre_spin_s") or 0.0),
                               inputs=f"{f.get('inputs') or 'fresh values'} in the same buffers (sealed core)"),
            timer=timer, flush_bytes=int(f.get("flush_bytes") or 0),
            host=host_check(cfg, windows, hosts, applicable=timer != "perf_counter",
                            idle_excess_s=float(f.get("idle_excess_s") or 0.0)),
            rounds=int(f.get("rounds") or len(windows[0])), stop_reason=str(f.get("stop")),
            fingerprint=item.get("fingerprint") or {}, wall_s=sum(windows[0]) + sum(windows[1]),
            notes=tuple(str(n) for n in f.get("notes") or []),
        )  # fmt: skip
        out.append({"shape": item["shape"], "dtype": item["dtype"], "pair": pair.to_dict(),
                    "baseline_ops": [str(o) for o in f.get("baseline_ops") or []],
                    "phases_s": f.get("phases_s") or {}})  # fmt: skip
    return out
