"""Import an upstream suite and validate every task on one device, in one call.

Usage::

    python tools/import_check.py kernelbench KernelBench/level1 --device cuda --out l1.json
    python tools/import_check.py kernelbench KernelBench/level2 --device cpu --quick
    python tools/import_check.py aka AgentKernelArena/tasks/triton2triton/vllm --device cuda
    python tools/import_check.py kernelbench KernelBench/level1 --root tasks_l1 --no-import

Every upstream file (KernelBench) or task folder (AgentKernelArena) becomes one row
``{problem, import, result, why}``: ``import`` is imported / imported GPU-only /
refused; ``result`` is pass, fail, refused, or ``not run`` (a GPU-only task on the
CPU); ``why`` holds the import reason or the failed checks with their fixes. Each task
is validated in its own process (``aka.validate_isolated``) under the memory cap, so
one task cannot take the others down. The rows go to ``--out`` as JSON, and a summary
with a markdown table of the rows that did not pass is printed.

Needs only the aka package and its evaluator's dependencies (torch, triton, numpy,
pyyaml, pydantic, pyarrow, blake3): no duckdb or polars on this path.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from aka import events as ev
from aka.importers import ImportResult, Outcome, import_agentkernelarena, import_kernelbench
from aka.tasks import TASK_FILE, load_task
from aka.validate import new_validation_id
from aka.validate_isolated import DEFAULT_MEMORY_GB, Validated, validate_many
from aka_ledger import Ledger


def _import(args: argparse.Namespace, root: Path) -> list[Outcome]:
    def show(o: Outcome) -> None:
        print(o.line(root), flush=True)

    if args.format == "kernelbench":
        result: ImportResult = import_kernelbench(
            args.path, root, kind=args.type, force=True, on_outcome=show
        )
    else:
        result = import_agentkernelarena(
            args.path, root, force=True, platform=args.platform, on_outcome=show
        )
    return result.outcomes


def _existing(root: Path) -> list[Outcome]:
    """Tasks already imported under ``root`` (``--no-import``), as imported outcomes."""
    return [
        Outcome(p.parent, "imported", "already imported", dest=p.parent)
        for p in sorted(root.rglob(TASK_FILE))
    ]


UNDER_LOAD = "fail under load"
"""A row's result while its failure with other tasks at once waits for its retry alone
(not final: ``--resume`` validates it again)."""


def _why(checks: list[ev.CheckResult]) -> str:
    failed = [c for c in checks if c.status == "fail" and not c.review]
    return "; ".join(f"{c.name}: {c.detail}" for c in failed)[:1500]


def check(args: argparse.Namespace, root: Path, ledger_dir: Path) -> list[dict[str, Any]]:
    """Import (unless ``--no-import``), then validate each imported task; one row per file.

    With ``--jobs N`` N tasks are validated at once, and each failure once more alone
    (:func:`aka.validate_isolated.validate_many`): that result is its row's, and ``rerun``
    holds what it got under load.
    """
    outcomes = _existing(root) if args.no_import else _import(args, root)
    kind = "cpu" if args.device == "cpu" else "cuda"
    cap = DEFAULT_MEMORY_GB[kind] if args.memory_gb is None else args.memory_gb
    rows: list[dict[str, Any]] = []
    todo: dict[Path, dict[str, Any]] = {}
    end = args.start + args.limit if args.limit else None
    kept = _finished(args.out) if args.resume else {}
    waited = _under_load(args.out) if args.resume else {}
    alone: list[Path] = []  # failed under load before: validated alone, first
    for o in outcomes[args.start : end]:
        row: dict[str, Any] = {"problem": o.path.name, "import": o.status, "result": "", "why": ""}
        rows.append(row)
        if o.path.name in kept:
            row |= kept[o.path.name]
        elif o.dest is None:
            row |= {"result": "refused", "why": f"{o.detail} (fix: {o.fix})"}
        elif kind not in load_task(o.dest, root=root).spec.devices:
            row |= {"result": "not run", "why": f"GPU-only: {o.detail}"}
        else:
            todo[o.dest] = row
            if o.path.name in waited:
                row["rerun"] = {"result": "fail", "why": waited[o.path.name]}
                alone.append(o.dest)
    lock = threading.Lock()

    def save() -> None:
        """Keep ``--out`` current, so a run cut short still leaves what it finished."""
        if args.out:
            with lock:
                args.out.write_text(json.dumps(rows, indent=2))

    def finished(done: Validated) -> None:
        row = todo[done.folder]
        result = "pass" if done.result.ok else "fail"
        seconds = round(done.seconds, 1)
        row |= {"result": result, "why": _why(done.result.checks), "seconds": seconds}
        aa = next((c.detail for c in done.result.checks if c.name == "timing_noise"), "")
        if aa.startswith("A/A"):  # the baseline timed against itself: noop's speedup
            row["aa"] = aa
        if done.under_load is not None:
            row["rerun"] = {"result": "fail", "why": _why(done.under_load.checks)}
        again = " (again alone)" if done.under_load is not None else ""
        print(f"{result.upper():<5} {row['problem']}{again} ({seconds} s) {row['why'][:300]}",
              flush=True)  # fmt: skip
        save()

    def retry(done: Validated) -> None:
        """A failure under load, shown (and written) until its retry alone replaces it."""
        row = todo[done.folder]
        row |= {"result": UNDER_LOAD, "why": _why(done.result.checks),
                "seconds": round(done.seconds, 1)}  # fmt: skip
        print(f"FAIL  {row['problem']} under load, to be validated alone "
              f"({row['seconds']} s) {row['why'][:300]}", flush=True)  # fmt: skip
        save()

    settings = dict(root=root, device=args.device, run_id=new_validation_id(), quick=args.quick,
                    memory_gb=cap or None, timeout_s=args.task_timeout)  # fmt: skip
    with Ledger.open(ledger_dir, registry=ev.REGISTRY, create=True) as led:
        # A row that failed under load in an earlier run waits for its retry alone, which
        # a run cut short by its time limit never reached: it goes first, alone.
        validate_many(led, ledger_dir, alone, jobs=1, on_result=finished, **settings)
        rest = [f for f in todo if f not in set(alone)]
        validate_many(led, ledger_dir, rest, jobs=args.jobs, on_result=finished,
                      on_retry=retry, **settings)  # fmt: skip
    return rows


def _finished(out: Path | None) -> dict[str, dict[str, Any]]:
    """The rows of an earlier ``--out`` that have their final result (``--resume``)."""
    if out is None or not out.is_file():
        return {}
    try:
        rows = json.loads(out.read_text())
    except ValueError as exc:
        raise SystemExit(f"--resume: {out} is not the JSON rows of an earlier run ({exc}); "
                         "move it away to start afresh") from exc  # fmt: skip
    return {r["problem"]: r for r in rows if r.get("result") in ("pass", "fail")}


def _under_load(out: Path | None) -> dict[str, str]:
    """Problem -> why, for the rows of an earlier ``--out`` that failed under load and
    were not yet validated alone (``--resume`` validates those alone, first)."""
    try:
        rows = json.loads(out.read_text()) if out is not None and out.is_file() else []
    except ValueError:
        return {}  # _finished said why already
    return {r["problem"]: str(r.get("why", "")) for r in rows if r.get("result") == UNDER_LOAD}


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows that did not pass, as a markdown table (problem, result, why)."""
    lines = ["| problem | result | why |", "|---|---|---|"]
    for r in rows:
        if r["result"] != "pass":
            why = str(r["why"]).replace("|", "\\|").replace("\n", " ")[:300]
            lines.append(f"| {r['problem']} | {r['result']} | {why} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the check; exit 0 whatever the results (the table is the output)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("format", choices=["kernelbench", "aka"])
    ap.add_argument("path", type=Path, help="An upstream folder (or one file / task folder).")
    ap.add_argument("--device", default="cuda", help="cpu, cuda or cuda:N.")
    ap.add_argument("--quick", action="store_true", help="Static and reference checks only.")
    ap.add_argument(
        "--type", default="torch2triton", help="KernelBench: torch2triton or torch2cuda."
    )
    ap.add_argument("--platform", default=None, help="AgentKernelArena: sm_90, cpu, ...")
    ap.add_argument("--root", type=Path, default=None, help="Where tasks go (default: temp).")
    ap.add_argument("--no-import", action="store_true", help="Validate the tasks under --root.")
    ap.add_argument("--out", type=Path, default=None, help="JSON rows written here.")
    ap.add_argument("--limit", type=int, default=0, help="Validate only the first N rows.")
    ap.add_argument(
        "--start", type=int, default=0, help="Skip the first N rows (resume a split check)."
    )
    ap.add_argument("--memory-gb", type=float, default=None, help="Cap per task's process.")
    ap.add_argument(
        "--jobs", type=int, default=1, help="Tasks validated at once (failures re-run alone)."
    )
    ap.add_argument(
        "--resume", action="store_true",
        help="Keep the rows --out already holds with a result; validate only the others "
             "(those that failed under load first, alone).",
    )  # fmt: skip
    ap.add_argument("--task-timeout", type=float, default=1800.0, help="Seconds per task.")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="aka-import-check-") as tmp:
        root = args.root or Path(tmp) / "tasks"
        rows = check(args, root, Path(tmp) / "ledger")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))
    counts = Counter(r["result"] for r in rows)
    imports = Counter(r["import"] for r in rows)
    print(f"\n{len(rows)} rows; import: {dict(imports)}; result on {args.device}: {dict(counts)}")
    aa = aa_summary(rows)
    if aa:
        print(aa)
    print(markdown(rows))
    return 0


def aa_summary(rows: list[dict[str, Any]]) -> str:
    """The baselines timed against themselves (a noop arm's speedup) over the rows that
    have one: count, range, median, and how many lie within 1 +/- 0.02."""
    values = sorted(float(r["aa"].split()[2]) for r in rows if r.get("aa"))
    if not values:
        return ""
    near = sum(abs(v - 1) <= 0.02 for v in values)
    return (f"A/A (noop) over {len(values)} tasks: {values[0]:.3f}-{values[-1]:.3f}, median "
            f"{statistics.median(values):.3f}; within 1 +/- 0.02: {near}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
