"""``aka bench agree``: the same candidates timed on every GPU, and how far their speedups spread.

The local runner gives each worker one GPU and interleaves arms across workers, so an
A/B comparison is only fair if a speedup measured on one card means the same on
another. This benchmark times fixed candidates (each task's own baseline, and any given
kernel, such as an autotune winner exported with ``aka audit ATTEMPT --export DIR``) on
every listed GPU, each GPU in its own process pinned the way a local worker is
(``CUDA_VISIBLE_DEVICES=<g>``, device ``cuda``), through the real evaluator. It reports,
per task, candidate and shape, each device's speedup and baseline time, their spread
(``(max - min) / median``), and each device's fingerprint: the one the evaluator
gives with its timings (which the ledger records and ``aka compare`` checks), or, where
it gives none, the pinned process's own reading once its evaluations are done (so that
process never touches the device before the evaluation workers fork).

Like :mod:`aka.cli._bench_eval` it needs no ledger, duckdb or polars:
``python -m aka.cli._bench_agree --gpus 0,1`` runs on a bare device machine. With
``--cpu N`` the same runs on N CPU processes (no GPU needed): degenerate, since every
process shares one CPU, but the same code path.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from aka.cli._bench_eval import TASKS_ROOT, _job, triton_tasks
from aka.errors import InputError
from aka.timing import device_kind


def parse_candidate(spec: str) -> tuple[Path, Path]:
    """``TASK_DIR=SOURCE_DIR`` -> the two folders, each checked to exist."""
    task, eq, source = spec.partition("=")
    if not eq or not task or not source:
        raise InputError(f"bad candidate {spec!r}", where="--candidate",
                         fix="use TASK_DIR=SOURCE_DIR (e.g. from `aka audit ATTEMPT --export DIR`)")  # fmt: skip
    paths = (Path(task).resolve(), Path(source).resolve())
    if not (paths[0] / "task.yaml").is_file():
        raise InputError(f"no task.yaml in {paths[0]}", where="--candidate",
                         fix="give the task's folder before '='")  # fmt: skip
    if not paths[1].is_dir():
        raise InputError(f"no folder {paths[1]}", where="--candidate",
                         fix="give the candidate's source folder after '='")  # fmt: skip
    return paths


def time_candidate(task: Path, source: Path | None, device: str, workers: Any,
                   timing: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """One evaluation: the task's source as baseline, ``source`` laid over it as candidate."""
    from aka.eval import run_job

    job = replace(_job(task, device), timing=dict(timing))
    ignore = shutil.ignore_patterns("__pycache__")
    with tempfile.TemporaryDirectory(prefix="aka-bench-agree-") as tmp:
        root = Path(tmp)
        shutil.copytree(task, root / "task", ignore=ignore)
        for name in ("base", "cand"):
            shutil.copytree(task / "source", root / name, ignore=ignore)
        if source is not None:
            shutil.copytree(source, root / "cand", ignore=ignore, dirs_exist_ok=True)
        verdict = run_job(job, root, workers=workers)
    rows = [{"shape": json.dumps(item["shape"], sort_keys=True), "dtype": item["dtype"],
             "speedup": item["pair"]["speedup"],
             "baseline_s": item["pair"]["baseline"]["median_s"],
             "candidate_s": item["pair"]["candidate"]["median_s"]}
            for item in verdict.timing]  # fmt: skip
    return {"correct": verdict.correct, "error": verdict.error, "fingerprint": verdict.device,
            "rows": rows}  # fmt: skip


def time_here(tasks: list[Path], candidates: list[tuple[Path, Path]], device: str,
              timing: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """Every task's baseline and every given candidate, on this process's device."""
    from aka.eval import Switches, Workers
    from aka.timing import device_fingerprint

    jobs: list[tuple[Path, Path | None, str]] = [(t, None, "baseline") for t in tasks]
    jobs += [(t, s, s.name) for t, s in candidates]
    workers = Workers(Switches.from_env().with_warm(True))
    out: list[dict[str, Any]] = []
    fingerprint: dict[str, Any] = {}
    try:
        for task, source, name in jobs:
            found = time_candidate(task, source, device, workers, timing)
            fingerprint = fingerprint or found["fingerprint"]
            out += [{"task": _task_name(task), "candidate": name, "correct": found["correct"],
                     "error": found["error"], **row} for row in found["rows"] or [{}]]  # fmt: skip
    finally:
        workers.shutdown()
    return {"fingerprint": fingerprint or device_fingerprint(device), "rows": out}


def _task_name(task: Path) -> str:
    return str(task.relative_to(TASKS_ROOT)) if task.is_relative_to(TASKS_ROOT) else task.name


def _spread(values: list[float]) -> float | None:
    med = statistics.median(values) if values else 0.0
    return (max(values) - min(values)) / med if len(values) > 1 and med > 0 else None


def agreement(devices: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per task, candidate and shape: each device's speedup and baseline time, and spreads.

    Args:
        devices: device label -> :func:`time_here`'s result on that device.

    A row timed on only some devices (the candidate failed or timed out on the others)
    lists the devices that lack it in ``missing`` and has spreads over those that timed it.
    """
    keyed: dict[tuple[str, str, str, str], dict[str, dict[str, Any]]] = {}
    for label, found in devices.items():
        for row in found["rows"]:
            if row.get("speedup") is None:
                continue
            key = (row["task"], row["candidate"], row["shape"], row["dtype"])
            keyed.setdefault(key, {})[label] = row
    rows: list[dict[str, Any]] = []
    for (task, cand, shape, dtype), by_dev in sorted(keyed.items()):
        speedups = [r["speedup"] for r in by_dev.values()]
        base = [r["baseline_s"] for r in by_dev.values()]
        rows.append({"task": task, "candidate": cand, "shape": shape, "dtype": dtype,
                     "speedup": {d: r["speedup"] for d, r in by_dev.items()},
                     "baseline_s": {d: r["baseline_s"] for d, r in by_dev.items()},
                     "speedup_spread": _spread(speedups), "baseline_spread": _spread(base),
                     "missing": sorted(set(devices) - set(by_dev))})  # fmt: skip
    spreads: list[float] = [r["speedup_spread"] for r in rows if r["speedup_spread"] is not None]
    kinds = {json.dumps(device_kind(f["fingerprint"]), sort_keys=True) for f in devices.values()}
    return {
        "devices": {d: f["fingerprint"] for d, f in devices.items()},
        "same_kind": len(kinds) == 1,
        "rows": rows,
        "max_speedup_spread": max(spreads) if spreads else None,
        "median_speedup_spread": statistics.median(spreads) if spreads else None,
        "within_1pct": sum(s <= 0.01 for s in spreads),
        "compared": len(spreads),
        "failed": [dict(zip(("device", "task", "candidate", "error"), f, strict=True))
                   for f in dict.fromkeys((d, r["task"], r["candidate"], r["error"])
                                          for d, found in devices.items()
                                          for r in found["rows"] if not r["correct"])],
    }  # fmt: skip


def run_agree(gpus: list[int] | None, cpu: int | None, tasks: list[Path],
              candidates: list[tuple[Path, Path]], timing: dict[str, Any],
              one_at_a_time: bool = False) -> dict[str, Any]:  # fmt: skip
    """Start one pinned process per device, collect their timings, compare them."""
    slots = ([(f"gpu{g}", str(g), "cuda") for g in gpus] if gpus
             else [(f"cpu{i}", "", "cpu") for i in range(cpu or 1)])  # fmt: skip
    argv = [sys.executable, "-m", "aka.cli._bench_agree", "--one", "--timing", json.dumps(timing)]
    argv += [a for t in tasks for a in ("--task", str(t))]
    argv += [a for t, s in candidates for a in ("--candidate", f"{t}={s}")]
    procs: dict[str, subprocess.Popen[str]] = {}
    outs: dict[str, str] = {}
    for label, visible, device in slots:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": visible}
        procs[label] = subprocess.Popen([*argv, "--device", device], env=env,
                                        stdout=subprocess.PIPE, text=True)  # fmt: skip
        if one_at_a_time:
            outs[label] = procs[label].communicate()[0]
    for label, proc in procs.items():
        outs[label] = outs.get(label) or proc.communicate()[0]
        if proc.returncode != 0:
            raise RuntimeError(f"the {label} process failed (exit {proc.returncode})")
    found = {label: json.loads(out.strip().splitlines()[-1]) for label, out in outs.items()}
    report = agreement(found)
    report["timing"] = timing
    return report


def render(report: dict[str, Any]) -> str:
    """One line per device, one per timed shape, and the summary."""
    lines = []
    for label, fp in report["devices"].items():
        what = fp.get("name") or fp.get("host_cpu")
        lines.append(f"{label}: {what}  uuid {fp.get('uuid', '-')}  driver {fp.get('driver', '-')}")
    labels = list(report["devices"])
    lines.append("task  candidate  shape  " + "  ".join(labels) + "  spread")
    for r in report["rows"]:
        sp = "  ".join(f"{r['speedup'][d]:.4f}" if d in r["speedup"] else "-" for d in labels)
        spread = "-" if r["speedup_spread"] is None else f"{100 * r['speedup_spread']:.2f} %"
        lines.append(f"{r['task']}  {r['candidate']}  {r['shape']}  {sp}  {spread}")
    worst = report["max_speedup_spread"]
    lines.append(f"same kind of device: {report['same_kind']}; speedups within 1 %: "
                 f"{report['within_1pct']} of {report['compared']}; largest spread "
                 + ("-" if worst is None else f"{100 * worst:.2f} %"))  # fmt: skip
    lines += [f"failed on {f['device']}: {f['task']} {f['candidate']}: {f['error']}"
              for f in report["failed"]]  # fmt: skip
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--gpus", help="e.g. 0,1,2,3")
    p.add_argument("--cpu", type=int, help="N CPU processes instead of GPUs")
    p.add_argument("--tasks", type=int, default=0, help="the first N bundled Triton tasks")
    p.add_argument("--task", action="append", default=[], help="a task folder (repeatable)")
    p.add_argument("--candidate", action="append", default=[], help="TASK_DIR=SOURCE_DIR")
    p.add_argument("--max-time-s", type=float, default=1.0)
    p.add_argument("--one-at-a-time", action="store_true")
    p.add_argument("--output")
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--device", default="cpu", help=argparse.SUPPRESS)
    p.add_argument("--timing", help=argparse.SUPPRESS)
    return p


def select(tasks: int, task: list[str], candidate: list[str]) -> tuple[list[Path], list[tuple[Path, Path]]]:  # fmt: skip
    """The task folders and candidates the flags name (every candidate's task included)."""
    cands = [parse_candidate(c) for c in candidate]
    chosen = [*triton_tasks(tasks), *(Path(t).resolve() for t in task)]
    for t in chosen:
        if not (t / "task.yaml").is_file():
            raise InputError(f"no task.yaml in {t}", where="--task", fix="give a task's folder")
    chosen += [t for t, _ in cands if t not in chosen]
    if not chosen:
        raise InputError("no task chosen", where="--tasks/--task", fix="e.g. --tasks 3")
    return list(dict.fromkeys(chosen)), cands


def main(argv: list[str] | None = None) -> None:
    """``python -m aka.cli._bench_agree``: the JSON report, without the CLI."""
    args = _parser().parse_args(argv)
    tasks, cands = select(args.tasks, args.task, args.candidate)
    if args.one:  # a pinned child: time here, one JSON line on stdout
        print(json.dumps(time_here(tasks, cands, args.device, json.loads(args.timing))))
        return
    gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else None
    timing = {"target_rel_ci": 0.005, "max_time_s": args.max_time_s, "min_samples": 10}
    report = run_agree(gpus, args.cpu, tasks, cands, timing, args.one_at_a_time)
    text = json.dumps(report, indent=2)
    if args.output:
        Path(args.output).write_text(text)
    print(text)


try:
    from typing import Annotated

    import typer

    from aka.cli._groups import bench_app
except ImportError:  # a bare device machine: ``python -m aka.cli._bench_agree`` only
    pass
else:

    @bench_app.command("agree")
    def bench_agree(
        gpus: Annotated[str | None, typer.Option("--gpus", help="GPUs, e.g. 0,1,2,3.")] = None,
        cpu: Annotated[
            int | None, typer.Option("--cpu", min=1, help="Instead: N CPU processes.")
        ] = None,
        tasks: Annotated[
            int, typer.Option("--tasks", min=0, help="First N bundled Triton tasks.")
        ] = 0,
        task: Annotated[
            list[str] | None, typer.Option("--task", help="A task folder (repeatable).")
        ] = None,
        candidate: Annotated[
            list[str] | None,
            typer.Option(
                "--candidate",
                help="TASK_DIR=SOURCE_DIR, laid over the task's source "
                "(e.g. from `aka audit ATTEMPT --export DIR`); repeatable.",
            ),
        ] = None,
        max_time_s: Annotated[
            float, typer.Option("--max-time-s", min=0.01, help="Timing budget per shape.")
        ] = 1.0,
        one_at_a_time: Annotated[
            bool, typer.Option("--one-at-a-time", help="One device after another, not all at once.")
        ] = False,
        fmt: Annotated[str, typer.Option("--format", "-f", help="table or json.")] = "table",
        output: Annotated[
            Path | None, typer.Option("--output", "-o", help="Also write the JSON report here.")
        ] = None,
    ) -> None:
        """Time the same candidates on every GPU; the spread of their speedups across GPUs.

        Each task's baseline (and each --candidate) is evaluated on every device, each
        device in its own process pinned like a local runner's worker, all at once
        unless --one-at-a-time. Reports per shape each device's speedup and baseline
        time, their spread ((max - min) / median) and each device's fingerprint.
        """
        if fmt not in ("table", "json"):
            raise InputError(f"unknown format {fmt!r}", where="--format", fix="use table or json")
        if (gpus is None) == (cpu is None):
            raise InputError("give --gpus or --cpu (one of them)", where="--gpus/--cpu",
                             fix="e.g. --gpus 0,1,2,3")  # fmt: skip
        from aka_runners import parse_gpus

        gpu_list = parse_gpus(gpus) if gpus is not None else None
        chosen, cands = select(tasks, task or [], candidate or [])
        timing = {"target_rel_ci": 0.005, "max_time_s": max_time_s, "min_samples": 10}
        report = run_agree(gpu_list, cpu, chosen, cands, timing, one_at_a_time)
        if output is not None:
            output.write_text(json.dumps(report, indent=2))
        typer.echo(json.dumps(report, indent=2) if fmt == "json" else render(report))


if __name__ == "__main__":
    main()
