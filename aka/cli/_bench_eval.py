"""``aka bench eval``: evaluations per minute, warm workers against a fresh interpreter per stage.

Each bundled Triton task's baseline is evaluated as a candidate through the real
pipeline (:func:`aka.eval._pipeline.run_job`: static checks, the candidate process, the
checker process, every detector), ``--repeat`` times per mode, first along the naive
path (a fresh interpreter per stage: compile, correctness and timing each in its own
process, then the checker), then as aka evaluates (one candidate process and the checker,
both forked from the warm zygote, :mod:`aka.eval._zygote`). Overhead per candidate is
wall time minus the time inside measured kernel calls (median x samples of both timed
arms). The core needs torch, triton and PyYAML (``aka.cli`` itself imports typer), never the ledger, duckdb or polars,
so ``python -m aka.cli._bench_eval`` also runs on a device machine without them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from aka.eval import Job, Switches, Workers, run_job
from aka.timing import aa_bar, aa_deviation

TASKS_ROOT = Path(__file__).resolve().parents[2] / "tasks" / "triton2triton"
TIMING = {"target_rel_ci": 0.005, "max_time_s": 0.2, "min_samples": 5}


def triton_tasks(limit: int) -> list[Path]:
    """The first ``limit`` bundled Triton tasks (sorted by path)."""
    found = sorted(p.parent for p in TASKS_ROOT.rglob("task.yaml"))
    return found[:limit]


def _job(task: Path, device: str) -> Job:
    import yaml

    spec = yaml.safe_load((task / "task.yaml").read_text())
    entry_file, entry_symbol = spec["entry"].split(":")
    shapes = spec["shapes"]["cpu" if device == "cpu" else "tuning"]
    return Job(reference=spec.get("reference", "reference.py"), editable=spec["editable"],
               forbidden=spec.get("forbidden", []), operators=spec.get("operators", "any"),
               allowed_operators=spec.get("allowed_operators", []), entry_file=entry_file,
               entry_symbol=entry_symbol, pass_shape=spec.get("pass_shape", False),
               backend=spec["backend"], shapes=shapes, dtypes=spec["dtypes"],
               tolerances=spec["tolerances"], seeds=int(spec.get("seeds", 1)), device=device,
               time=True, timing=dict(TIMING), seed=1)  # fmt: skip


def lay_out_baseline(task: Path, root: Path) -> Path:
    """``root`` as an evaluation of ``task``'s own source against itself (A/A)."""
    shutil.copytree(task, root / "task", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("base", "cand"):
        shutil.copytree(task / "source", root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def evaluate_baseline(task: Path, device: str, workers: Workers, *, naive: bool = False
                      ) -> dict[str, Any]:  # fmt: skip
    """Evaluate the task's own source as a candidate; wall time, kernel time, verdict."""
    job = _job(task, device)
    with tempfile.TemporaryDirectory(prefix="aka-bench-eval-") as tmp:
        root = lay_out_baseline(task, Path(tmp))
        start = time.perf_counter()
        verdict = run_job(job, root, workers=workers, split_stages=naive)
        wall = time.perf_counter() - start
    kernel = sum(
        arm["median_s"] * arm["n"]
        for item in verdict.timing
        for arm in (item["pair"]["baseline"], item["pair"]["candidate"])
    )
    # The candidate is the baseline: every speedup should be 1 within its interval.
    shapes = [{"speedup": round(item["pair"]["speedup"], 4), "n": item["pair"]["n_rounds"],
               "stop": item["pair"]["stop_reason"],
               "median_us": round(item["pair"]["candidate"]["median_s"] * 1e6, 3)}
              for item in verdict.timing]  # fmt: skip
    return {"task": str(task.relative_to(TASKS_ROOT)), "wall_s": wall, "kernel_s": kernel,
            "overhead_s": wall - kernel, "correct": verdict.correct, "error": verdict.error,
            "stage_s": verdict.stage_s, "shapes": shapes}  # fmt: skip


def _mode(tasks: list[Path], device: str, repeat: int, warm: bool,
          workers: Workers | None = None) -> dict[str, Any]:  # fmt: skip
    """One mode's runs; ``workers`` (warm mode only) is left running for the caller."""
    own = workers is None
    workers = workers or Workers(Switches.from_env().with_warm(warm))
    start = time.perf_counter()
    try:
        runs = [evaluate_baseline(t, device, workers, naive=not warm)
                for _ in range(repeat) for t in tasks]  # fmt: skip
    finally:
        if own:
            workers.shutdown()
    total = time.perf_counter() - start
    over = [r["overhead_s"] for r in runs]
    # After the first pass: each task evaluated before in this mode (compiled kernels
    # cached in both modes, the zygote and spares up when warm). What a long RL run sees.
    later = runs[len(tasks) :]
    later_s = sum(r["wall_s"] for r in later)
    steady = {
        "candidates": len(later),
        "wall_s": round(later_s, 3),
        "candidates_per_min": round(60 * len(later) / later_s, 2),
        "overhead_median_s": round(statistics.median(r["overhead_s"] for r in later), 3),
    } if later else None  # fmt: skip
    return {
        "mode": "warm" if warm else "naive",
        "candidates": len(runs),
        "total_s": round(total, 3),
        "candidates_per_min": round(60 * len(runs) / total, 2),
        "overhead_median_s": round(statistics.median(over), 3),
        "overhead_first_s": round(over[0], 3),
        "all_correct": all(r["correct"] for r in runs),
        "steady": steady,
        "stage_median_s": {
            k: round(statistics.median(r["stage_s"][k] for r in runs if k in r["stage_s"]), 3)
            for k in dict.fromkeys(k for r in runs for k in r["stage_s"])
        },
        "aa": aa_summary(runs),
        "runs": runs,
    }


def aa_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each timed shape's worst A/A deviation over its evaluations against the engine's
    bar for a kernel that long (docs/benchmarks.md: 1.03 under 20 µs, 1.01 from 35 µs)."""
    by: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in runs:
        for i, s in enumerate(r.get("shapes") or []):
            by.setdefault((r["task"], i), []).append(s)
    rows = []
    for (task, i), got in sorted(by.items()):
        median_us = statistics.median(s["median_us"] for s in got)
        bar = aa_bar(median_us * 1e-6)
        worst = max(aa_deviation(s["speedup"]) for s in got)
        rows.append({"task": task, "shape": i, "median_us": round(median_us, 2),
                     "worst": round(worst, 4), "bar": bar,
                     "within": None if bar is None else worst <= bar})  # fmt: skip
    judged = [r for r in rows if r["within"] is not None]
    return {"shapes": len(rows), "judged": len(judged),
            "within": sum(bool(r["within"]) for r in judged), "rows": rows}  # fmt: skip


def run_bench(device: str = "cpu", tasks: int = 2, repeat: int = 1) -> dict[str, Any]:
    """Both modes over the same tasks; warm includes the zygote's start in its total."""
    chosen = triton_tasks(tasks)
    naive = _mode(chosen, device, repeat, warm=False)
    workers = Workers(Switches.from_env().with_warm(True))
    try:
        warm = _mode(chosen, device, repeat, warm=True, workers=workers)
        # The zygote is still up: did it stay off CUDA while its children used it?
        zygote = workers.zygote_status(device)
    finally:
        workers.shutdown()
    return {
        "device": device,
        "tasks": [str(t.relative_to(TASKS_ROOT)) for t in chosen],
        "repeat": repeat,
        "naive": naive,
        "warm": warm,
        "zygote_cuda_initialized": zygote["cuda_initialized"],
        "zygote_missing": zygote.get("missing", []),
        "speedup_candidates_per_min": round(
            warm["candidates_per_min"] / naive["candidates_per_min"], 2
        ),
        "speedup_steady": round(
            warm["steady"]["candidates_per_min"] / naive["steady"]["candidates_per_min"], 2
        )
        if warm["steady"] and naive["steady"]
        else None,
    }


def render(report: dict[str, Any]) -> str:
    """A short table: one line per mode."""
    lines = [f"device {report['device']}, tasks {', '.join(report['tasks'])}"]
    lines.append("mode   candidates  total_s  cand/min  overhead_median_s  first_s  correct")
    for mode in ("naive", "warm"):
        m = report[mode]
        lines.append(f"{mode:<6} {m['candidates']:>10}  {m['total_s']:>7.1f}  "
                     f"{m['candidates_per_min']:>8.2f}  {m['overhead_median_s']:>17.2f}  "
                     f"{m['overhead_first_s']:>7.2f}  {m['all_correct']}")  # fmt: skip
    for mode in ("naive", "warm"):
        stages = ", ".join(f"{k} {v:.2f}" for k, v in report[mode]["stage_median_s"].items())
        lines.append(f"{mode} median s per stage: {stages}")
    aa = report["warm"]["aa"]
    lines.append(f"warm A/A: {aa['within']} of {aa['judged']} judged shapes within their bar "
                 f"({aa['shapes'] - aa['judged']} between the bands)")  # fmt: skip
    for mode in ("naive", "warm"):
        if st := report[mode]["steady"]:
            lines.append(f"{mode} after the first pass: {st['candidates']} candidates, "
                         f"{st['candidates_per_min']:.2f}/min, overhead median "
                         f"{st['overhead_median_s']:.2f} s")  # fmt: skip
    lines.append(f"warm / naive candidates per minute: {report['speedup_candidates_per_min']}x"
                 f" (after the first pass: {report['speedup_steady']}x)")  # fmt: skip
    lines.append(f"zygote initialized CUDA: {report['zygote_cuda_initialized']}")
    return "\n".join(lines)


try:
    from typing import Annotated

    import typer

    from aka.cli._groups import bench_app
except ImportError:  # a bare device machine: ``python -m aka.cli._bench_eval`` only
    pass
else:

    @bench_app.command("eval")
    def bench_eval(
        device: Annotated[str, typer.Option("--device", help="cpu or cuda.")] = "cpu",
        tasks: Annotated[int, typer.Option("--tasks", min=1, help="Bundled Triton tasks.")] = 2,
        repeat: Annotated[int, typer.Option("--repeat", min=1, help="Runs per task.")] = 1,
        distinct: Annotated[
            int,
            typer.Option(
                "--distinct",
                min=0,
                help="Instead: a stream of N distinct new "
                "candidates (tunable variants, each compiled fresh).",
            ),
        ] = 0,
        in_flight: Annotated[
            int, typer.Option("--in-flight", min=1, help="With --distinct: evaluations at once.")
        ] = 2,
        max_time_s: Annotated[
            float,
            typer.Option(
                "--max-time-s",
                min=0.01,
                help="With --distinct: the timing budget per shape (a trainer's `timing`).",
            ),
        ] = TIMING["max_time_s"],
        reserve: Annotated[
            int,
            typer.Option(
                "--reserve",
                min=1,
                help="With --distinct: processes started ahead, times those in flight.",
            ),
        ] = 1,
        fmt: Annotated[str, typer.Option("--format", "-f", help="table or json.")] = "table",
    ) -> None:
        """Candidates per minute and overhead per candidate: warm workers vs fresh interpreters.

        Evaluates the baselines of the first TASKS bundled Triton tasks REPEAT times through
        the real evaluator in each mode (naive first: a fresh interpreter per stage; then
        warm, in the same run), with the median wall time of each stage. With --distinct N:
        N distinct new candidates one at a time, then IN_FLIGHT at once, then again with
        their kernels cached (compile time and the overhead beyond it).
        """
        if fmt not in ("table", "json"):
            raise typer.BadParameter("use table or json", param_hint="--format")
        if distinct:
            from aka.cli import _bench_distinct

            try:
                found = _bench_distinct.run_distinct(
                    device, distinct, in_flight, tasks, max_time_s=max_time_s, reserve=reserve
                )
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint="--distinct") from None
            out = json.dumps(found, indent=2) if fmt == "json" else _bench_distinct.render(found)
            typer.echo(out)
            return
        report = run_bench(device=device, tasks=tasks, repeat=repeat)
        typer.echo(json.dumps(report, indent=2) if fmt == "json" else render(report))


def main() -> None:
    """``python -m aka.cli._bench_eval``: the same report as JSON, without the CLI."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--output")
    args = parser.parse_args()
    text = json.dumps(run_bench(args.device, args.tasks, args.repeat), indent=2)
    if args.output:
        Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
