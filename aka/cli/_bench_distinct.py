"""``aka bench eval --distinct N``: a stream of distinct new kernels, several in flight.

What an RL trainer sends: candidates the evaluator has never seen, each compiled fresh.
The stream is the bundled Triton tasks' tunable variants (``tunables`` in task.yaml, every
combination the starting source declares), each made distinct by a comment naming the
pass, so its tree digest and its kernel cache (:func:`aka.eval._warm.cache_env`) are new
and Triton compiles it from scratch. Three passes through one set of warm workers:

1. ``serial``: one at a time, compile included;
2. ``in_flight``: the same variants (new digests: compiled again) with ``--in-flight``
   evaluations at once; compiles and correctness runs overlap, timing stays exclusive per
   device (:class:`aka.eval._gate.Gate`); verdicts must equal the serial pass's;
3. ``cached``: the in-flight pass's exact candidates again, one at a time, their kernels
   cached: per candidate, compile ≈ wall(serial) − wall(cached) and the overhead beyond
   compile is the cached wall minus the time inside measured kernel calls.

Like :mod:`aka.cli._bench_eval` it needs no ledger, duckdb or polars (a bare device
machine runs ``python -m aka.cli._bench_distinct``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import secrets
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka.cli._bench_eval import TASKS_ROOT, TIMING, _job, triton_tasks
from aka.eval import Switches, Workers, gpu_free_fraction, memory_reader, run_job
from aka.tunables import variants


@dataclass(frozen=True)
class Variant:
    """One tunable variant of a task: its entry file's name and text."""

    task: Path
    entry: str
    values: dict[str, int]
    text: str


def distinct_sources(tasks: list[Path], n: int) -> list[Variant]:
    """``n`` variants, round-robin over the tasks' tunable combinations."""
    import yaml

    streams = []
    for task in tasks:
        spec = yaml.safe_load((task / "task.yaml").read_text())
        entry = spec["entry"].split(":")[0]
        source = (task / "source" / entry).read_text()
        found = variants(source, spec.get("tunables") or {})
        streams.append([Variant(task, entry, values, text) for values, text in found])
    out: list[Variant] = []
    for i in range(max((len(s) for s in streams), default=0)):
        out += [s[i] for s in streams if i < len(s)]
    if len(out) < n:
        raise ValueError(f"the tasks' tunables give {len(out)} distinct variants, not {n}: "
                         "use fewer (--distinct) or more tasks (--tasks)")  # fmt: skip
    return out[:n]


def evaluate_variant(task: Path, entry: str, text: str, device: str, workers: Workers,
                     max_time_s: float = TIMING["max_time_s"]) -> dict[str, Any]:  # fmt: skip
    """One candidate through the real pipeline; wall time, kernel time, verdict.

    ``max_time_s``: the timing budget per shape, the knob a trainer sets (``timing`` in
    its aka settings) since each candidate holds the device alone while it is timed."""
    ignore = shutil.ignore_patterns("__pycache__")
    with tempfile.TemporaryDirectory(prefix="aka-bench-distinct-") as tmp:
        root = Path(tmp)
        shutil.copytree(task, root / "task", ignore=ignore)
        for name in ("base", "cand"):
            shutil.copytree(task / "source", root / name, ignore=ignore)
        (root / "cand" / entry).write_text(text)
        start = time.perf_counter()
        job = _job(task, device)
        job = dataclasses.replace(job, timing={**job.timing, "max_time_s": max_time_s})
        verdict = run_job(job, root, workers=workers)
        wall = time.perf_counter() - start
    pairs = [item["pair"] for item in verdict.timing]
    kernel = sum(arm["median_s"] * arm["n"] for pair in pairs
                 for arm in (pair["baseline"], pair["candidate"]))  # fmt: skip
    ratios = [p["baseline"]["median_s"] / p["candidate"]["median_s"] for p in pairs
              if p["candidate"]["median_s"] > 0 and p["baseline"]["median_s"] > 0]  # fmt: skip
    speedup = statistics.geometric_mean(ratios) if ratios else None
    again = any(n.startswith("evaluated again with the device to itself") for n in verdict.notes)
    phases: dict[str, float] = {}  # the timing stage's parts, every shape summed (the core)
    for item in verdict.timing:
        for name, seconds in (item.get("phases_s") or {}).items():
            phases[name] = phases.get(name, 0.0) + float(seconds)
    return {"wall_s": wall, "kernel_s": kernel, "speedup": speedup, "correct": verdict.correct,
            "flags": verdict.flags, "error": verdict.error, "stage_s": verdict.stage_s,
            "notes": verdict.notes,
            "timing_phases_s": phases, "again_alone": again}  # fmt: skip


def one_pass(items: list[Variant], tag: str, device: str, in_flight: int,
             workers: Workers, max_time_s: float = TIMING["max_time_s"], reserve: int = 1
             ) -> dict[str, Any]:  # fmt: skip
    """Evaluate every item (tagged ``tag``) with ``in_flight`` at once; rate and runs.

    ``device_held_s`` sums the stage that holds the device alone (``timing``):
    one device cannot take the stream faster than that sum, whatever overlaps around it.

    ``reserve``: processes of each kind kept started ahead, as a multiple of ``in_flight``
    (``prepared`` in the report). With one, the evaluations that follow the first
    ``in_flight`` take spares started only when those began."""

    def one(i: int) -> dict[str, Any]:
        v = items[i]
        text = v.text + f"\n# aka bench eval --distinct: {tag} {i}\n"  # a new digest
        run = evaluate_variant(v.task, v.entry, text, device, workers, max_time_s)
        return {"task": str(v.task.relative_to(TASKS_ROOT)), "values": v.values, **run}

    # As an Evaluator does from its first evaluation on (aka.api.Evaluator): the pass's
    # depth of processes started ahead, and waited for, so that the pass measures a
    # trainer's steady state (a batch arriving while the spares of the last one wait).
    prepared = in_flight * reserve
    workers.prepare(device, workers.switches.isolate_network, prepared, wait_s=PREPARE_WAIT_S)
    cpu_before, own_before = host_cpu(), own_cpu()
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=in_flight) as pool:
        runs = list(pool.map(one, range(len(items))))
    total = time.perf_counter() - start
    cpu_after, own_after = host_cpu(), own_cpu()
    memory = memory_probe(device)
    held = sum((r.get("stage_s") or {}).get(k, 0.0) for r in runs for k in HELD)
    return {"in_flight": in_flight, "prepared": prepared, "candidates": len(runs),
            "total_s": round(total, 3),
            "again_alone": sum(bool(r.get("again_alone")) for r in runs),
            "device_held_s": round(held, 3),
            "host_cpu_busy": busy_fraction(cpu_before, cpu_after),
            "evaluator_cpu_share": round((own_after - own_before) / total, 3),
            "candidates_per_min": round(60 * len(runs) / total, 2),
            "memory_probe": memory,
            "wall_median_s": round(statistics.median(r["wall_s"] for r in runs), 3),
            "stage_median_s": stage_medians(runs),
            "timing_phase_median_s": stage_medians(runs, "timing_phases_s"), "runs": runs}  # fmt: skip


def own_cpu() -> float:
    """CPU seconds of this process, every thread (the evaluator's own work: frames read and
    verified, verdicts built). Over a pass's wall, near 1.0 says its interpreter, one core
    under the GIL, is what the evaluations in flight wait on."""
    import resource

    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def host_cpu() -> tuple[int, int] | None:
    """Busy and total clock ticks of every core since boot (``/proc/stat``), or None."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return sum(fields) - idle, sum(fields)


def busy_fraction(before: tuple[int, int] | None, after: tuple[int, int] | None
                  ) -> float | None:  # fmt: skip
    """The share of the host's cores that were busy between two :func:`host_cpu` reads:
    whether a pass that overlaps work is bounded by the CPU or waits on something else."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 3)


PREPARE_WAIT_S = 120.0
"""How long a pass waits at most for its depth of prepared processes to start."""

HELD = ("timing",)
"""The stages during which a candidate process holds the device alone (the timing gate
hands it over at the core's last sample, before the ``finish`` stage)."""


def memory_probe(device: str) -> dict[str, float | str | None]:
    """The device's free memory share as admission reads it (None: unknown), and how long
    that one reading took: each evaluation that starts beside others waits for one such
    reading, one start at a time (``admit`` stage)."""
    start = time.perf_counter()
    free = gpu_free_fraction(device)
    return {"free_fraction": None if free is None else round(free, 3),
            "seconds": round(time.perf_counter() - start, 4), "via": memory_reader()}  # fmt: skip


def stage_medians(runs: list[dict[str, Any]], field: str = "stage_s") -> dict[str, float]:
    """Median seconds per stage over the runs that reached it (``gate``: waiting for the
    device while others time; ``timing`` holds it); ``field="timing_phases_s"``: per part
    of the timing stage instead."""
    names = sorted({k for r in runs for k in r.get(field) or {}})
    return {k: round(statistics.median(r[field][k] for r in runs if k in (r.get(field) or {})), 3)
            for k in names}  # fmt: skip


def speedup_agreement(one: dict[str, Any], other: dict[str, Any]) -> float | None:
    """The largest relative difference between two passes' speedups of the same variants:
    whether evaluations in flight time candidates as one at a time does."""
    diffs = [abs(b["speedup"] / a["speedup"] - 1) for a, b in zip(one["runs"], other["runs"],
                                                                   strict=True)
             if a.get("speedup") and b.get("speedup")]  # fmt: skip
    return round(max(diffs), 4) if diffs else None


def run_distinct(device: str = "cpu", distinct: int = 4, in_flight: int = 2, tasks: int = 3,
                 output: Path | None = None, max_time_s: float = TIMING["max_time_s"],
                 in_flight_first: bool = False, sweep: tuple[int, ...] = (),
                 warm_up: bool = False, reserve: int = 1,
                 profile: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """The three passes over one stream of ``distinct`` variants; see the module doc.

    ``in_flight_first``: the in-flight pass before the serial one, so that a run cut short
    by a time limit keeps it; it then pays each task's first-time costs (the clean
    baseline timing, the first import of each task's modules) that the serial pass
    otherwise pays.

    ``sweep``: more evaluations at once to try, each a further pass of new digests right
    after the in-flight pass (``in_flight_K``), to find the depth a device takes best.

    ``output``: each finished pass is written there at once, so a run cut short by a
    time limit still leaves the passes it finished.

    ``warm_up``: first, one variant of each task evaluated uncounted (``warm_up`` in the
    report), so that no counted pass pays the tasks' first-time costs.

    ``reserve``: each pass keeps this many times its evaluations in flight of each
    process started ahead (:func:`one_pass`).

    ``profile``: every counted pass's candidate and checker processes profiled into
    ``profile/<pass>`` (:mod:`aka.eval._profiling`), so that a pass in flight and the
    serial one can be ranked side by side; profiling slows them, so their rates are not
    the stream's.
    """
    if reserve < 1:
        raise ValueError(f"reserve must be 1 or more, not {reserve}")
    items = distinct_sources(triton_tasks(tasks), distinct)
    salt = secrets.token_hex(4)
    workers = Workers(Switches.from_env().with_warm(True))
    done: dict[str, Any] = {"device": device, "distinct": distinct, "in_flight": in_flight,
                            "max_time_s": max_time_s, "reserve": reserve}  # fmt: skip

    def finished(name: str, report: dict[str, Any]) -> dict[str, Any]:
        done[name] = report
        if output is not None:
            output.write_text(json.dumps(done, indent=2))
        return report

    def profile_into(name: str) -> None:
        if profile is not None:
            workers.switches = dataclasses.replace(workers.switches,
                                                   profile_dir=(profile / name).resolve())  # fmt: skip

    try:
        if warm_up:
            firsts = list({v.task: v for v in reversed(items)}.values())
            finished("warm_up", one_pass(firsts, f"{salt} warm-up", device, len(firsts),
                                         workers, max_time_s))  # fmt: skip
        order = ["in_flight_pass", "serial"] if in_flight_first else ["serial", "in_flight_pass"]
        order[order.index("in_flight_pass") + 1 : 0] = [f"in_flight_{k}" for k in sweep]
        for name in order:  # new digests in each: every candidate compiled afresh
            tag, k = (f"{salt} serial", 1) if name == "serial" else (f"{salt} in-flight", in_flight)
            if name.startswith("in_flight_") and name != "in_flight_pass":
                tag, k = f"{salt} {name}", int(name.rsplit("_", 1)[1])
            profile_into(name)
            finished(name, one_pass(items, tag, device, k, workers, max_time_s, reserve))
        serial, flight = done["serial"], done["in_flight_pass"]
        profile_into("cached")
        cached = finished("cached",  # the same digests: kernels cached
                          one_pass(items, f"{salt} in-flight", device, 1, workers, max_time_s,
                                   reserve))  # fmt: skip
    finally:
        workers.shutdown()

    def key(p: dict[str, Any]) -> list[tuple[bool, list[str]]]:
        return [(r["correct"], sorted(r["flags"])) for r in p["runs"]]

    counted = {name: p for name, p in done.items()
               if name.startswith("in_flight_") or name in ("serial", "cached")}  # fmt: skip
    same = {name: key(p) == key(serial) for name, p in counted.items() if name != "serial"}
    compile_s = [s["wall_s"] - c["wall_s"] for s, c in zip(serial["runs"], cached["runs"],
                                                          strict=True)]  # fmt: skip
    beyond = [c["wall_s"] - c["kernel_s"] for c in cached["runs"]]
    return {
        **done,
        "device": device,
        "distinct": distinct,
        "in_flight": in_flight,
        "max_time_s": max_time_s,
        "serial": serial,
        "in_flight_pass": flight,
        "cached": cached,
        "verdicts_identical": all(same.values()),
        "verdicts_identical_by_pass": same,
        "all_correct": all(r["correct"] for p in counted.values() for r in p["runs"]),
        "compile_median_s": round(statistics.median(compile_s), 3),
        "overhead_beyond_compile_median_s": round(statistics.median(beyond), 3),
        "speedup_in_flight": round(flight["candidates_per_min"] / serial["candidates_per_min"], 2),
        "speedup_agreement": {
            name: speedup_agreement(serial, p)
            for name, p in done.items()
            if name.startswith("in_flight_") or name == "cached"
        },
    }


def render(report: dict[str, Any]) -> str:
    """One line per pass and the comparisons."""
    lines = [
        f"device {report['device']}, {report['distinct']} distinct candidates, "
        f"timing budget {report.get('max_time_s', TIMING['max_time_s'])} s per shape"
    ]
    swept = sorted(k for k in report if k.startswith("in_flight_") and k != "in_flight_pass")
    for name in ["serial", "in_flight_pass", *swept, "cached"]:
        p = report[name]
        lines.append(f"{name:<15} in flight {p['in_flight']} (prepared {p.get('prepared', '-')}): "
                     f"{p['candidates_per_min']:.2f}/min, "
                     f"wall median {p['wall_median_s']:.2f} s, total {p['total_s']:.1f} s, "
                     f"device held alone {p.get('device_held_s', 0.0):.1f} s, "
                     f"host CPU busy {p.get('host_cpu_busy')}, "
                     f"evaluator CPU {p.get('evaluator_cpu_share')}, "
                     f"evaluated again alone {p.get('again_alone', 0)}")  # fmt: skip
        stages = ", ".join(f"{k} {v:.2f}" for k, v in p.get("stage_median_s", {}).items())
        lines.append(f"{'':<15} stage medians (s): {stages}")
        phases = ", ".join(f"{k} {v:.3f}" for k, v in p.get("timing_phase_median_s", {}).items())
        lines.append(f"{'':<15} timing stage, per part (s): {phases}")
    lines.append(f"verdicts identical to one at a time: {report['verdicts_identical']} "
                 f"({report.get('verdicts_identical_by_pass')}); every pass all correct: "
                 f"{report['all_correct']}")  # fmt: skip
    agree = ", ".join(f"{k} {v}" for k, v in (report.get("speedup_agreement") or {}).items())
    lines.append(
        f"largest relative difference of a variant's speedup from the serial pass: {agree}"
    )
    lines.append(f"compile median {report['compile_median_s']:.2f} s; overhead beyond compile "
                 f"median {report['overhead_beyond_compile_median_s']:.2f} s")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    """``python -m aka.cli._bench_distinct``: the report as JSON, without the CLI."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--distinct", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--max-time-s", type=float, default=TIMING["max_time_s"])
    parser.add_argument("--in-flight-first", action="store_true")
    parser.add_argument("--sweep", default="", help="more depths to try, e.g. 12,16")
    parser.add_argument("--reserve", type=int, default=1,
                        help="processes started ahead, times those in flight")  # fmt: skip
    parser.add_argument(
        "--warm-up", action="store_true", help="one variant of each task evaluated first, uncounted"
    )
    parser.add_argument("--profile", help="profile each counted pass into PROFILE/<pass>")
    parser.add_argument("--output")
    args = parser.parse_args()
    out = Path(args.output) if args.output else None
    report = run_distinct(args.device, args.distinct, args.in_flight, args.tasks, out,
                          args.max_time_s, args.in_flight_first,
                          tuple(int(k) for k in args.sweep.split(",") if k),
                          args.warm_up, args.reserve,
                          Path(args.profile) if args.profile else None)  # fmt: skip
    if out is not None:
        out.write_text(json.dumps(report, indent=2))
    print(render(report))


if __name__ == "__main__":
    main()
