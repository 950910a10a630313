"""The timing benchmark: ``python -m aka.timing.bench`` (also ``aka bench timing``).

Runs ``processes`` fresh Python processes one after another (process start, allocation
and clock state differ between them, as they do between evaluations); each runs
``rounds`` rounds of A/A pairs over kernels from ~3 µs to ~3 ms, a sensitivity pair per
round on three kernels (candidate does 10 % more work), and, on GPU, the same A/A kernels
through ``triton.testing.do_bench`` and a KernelBench-style loop. Needs only torch and
triton on the GPU machine (no CLI dependencies).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aka.errors import AkaError, InputError
from aka.timing._bench_kernels import child_run
from aka.timing._bench_report import aggregate, render_markdown
from aka.timing._config import ENGINE_VERSION
from aka.timing._device import parse_device

__all__ = ["main", "run_bench"]


def run_bench(
    *,
    device: str = "cuda",
    processes: int = 5,
    rounds: int = 10,
    comparators: bool = True,
    budget_s: float = 600.0,
    max_time_s: float = 2.0,
    log: bool = True,
    raw_path: Path | None = None,
) -> dict[str, Any]:
    """Run the benchmark processes one after another and aggregate their records.

    Args:
        device: ``cuda`` (the real benchmark) or ``cpu`` (plumbing check, CPU kernels).
        processes: fresh processes to run.
        rounds: rounds per process (one A/A pair per kernel and method per round).
        comparators: also time each A/A pair with do_bench and a KernelBench-style loop.
        budget_s: wall budget for all processes; each stops starting rounds past its share.
        max_time_s: the engine's per-pair sampling budget.
        log: print one progress line per process to stderr.
        raw_path: if given, every process's records are written here as they arrive,
            so a long GPU run is never lost to a later failure.
    """
    _check_device(device)
    start = time.time()
    children: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in range(processes):
            out = Path(tmp) / f"child{p}.json"
            deadline = start + budget_s * (p + 1) / processes
            cmd = [sys.executable, "-m", "aka.timing.bench", "--child", str(out)]
            cmd += ["--device", device, "--rounds", str(rounds), "--seed", str(p)]
            cmd += ["--deadline", str(deadline), "--max-time-s", str(max_time_s)]
            cmd += [] if comparators else ["--no-comparators"]
            t0 = time.time()
            if subprocess.run(cmd, check=False).returncode != 0:
                raise AkaError(f"benchmark process {p} failed (its error is printed above)")
            children.append(json.loads(out.read_text()))
            if raw_path is not None:
                raw_path.write_text(json.dumps(children))
            if log:
                done = children[-1]["rounds_done"]
                print(f"process {p}: {done} rounds in {time.time() - t0:.1f} s", file=sys.stderr)
    meta = {
        "engine": ENGINE_VERSION,
        "device": device,
        "processes": processes,
        "rounds": rounds,
        "comparators": comparators,
        "max_time_s": max_time_s,
        "wall_s": time.time() - start,
        "command": " ".join(sys.argv) if sys.argv else "",
    }
    return aggregate(children, meta)


def _check_device(device: str) -> None:
    """Fail before spawning anything when the device cannot run the benchmark."""
    kind, index = parse_device(device)
    if kind == "cpu":
        return
    try:
        import torch
    except ImportError as exc:
        raise InputError(
            "torch is not installed", where="--device", fix="use --device cpu"
        ) from exc
    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        raise InputError(f"{device} is not available", where="--device", fix="use --device cpu")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m aka.timing.bench", description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--budget-s", type=float, default=600.0)
    ap.add_argument("--max-time-s", type=float, default=2.0)
    ap.add_argument("--no-comparators", action="store_true")
    ap.add_argument("--format", choices=["markdown", "json"], default="markdown")
    ap.add_argument("--output", type=Path, help="also write the JSON report here")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, default=0.0, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m aka.timing.bench``."""
    args = _parse(argv)
    if args.child is not None:
        deadline = args.deadline or time.time() + args.budget_s
        rec = child_run(
            args.device, args.rounds, args.seed, deadline, not args.no_comparators, args.max_time_s
        )
        args.child.write_text(json.dumps(rec))
        return 0
    report = run_bench(
        device=args.device,
        processes=args.processes,
        rounds=args.rounds,
        comparators=not args.no_comparators and args.device != "cpu",
        budget_s=args.budget_s,
        max_time_s=args.max_time_s,
        raw_path=args.output.with_suffix(".raw.json") if args.output else None,
    )
    text = json.dumps(report, indent=2)
    if args.output is not None:
        args.output.write_text(text)
    print(text if args.format == "json" else render_markdown(report))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
