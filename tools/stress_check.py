"""Whether imported KernelBench baselines meet their tolerance on the held-out stress cases.

Usage::

    python tools/stress_check.py ROOT --device cuda --out rows.json [--seconds 400]

For every imported task under ROOT whose held-out shapes include a stress case (scaled
or shifted inputs, :mod:`aka.importers._kb_stress`), the starting ``ModelNew`` (the
problem's own float32 code) and the float64 reference run on each held-out case, seeds 0
and 1, with the evaluator's float32 settings (TF32 off). A row gives, per case (``plain``,
``stressed``, ``shifted``), the worst element's share of the tolerance (1.0 is the edge).
The import chose the values on the CPU; this says whether a GPU's float32 libraries hold
them too. Rows are written after each task, and a rerun skips the tasks already in
``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from aka.eval import load_file_module
from aka.importers._kb_stress import CASES
from aka.tasks import TASK_FILE, Task, load_task
from aka.tolerance import effective_atol, rms


def _share(got: Any, want: Any, tol: dict[str, float]) -> float:
    """The worst element's distance over its tolerance (inf where an output is not finite
    or the shapes differ)."""
    got, want = got.detach().double(), want.detach().double().to(got.device)
    if got.shape != want.shape or not bool(torch.isfinite(got).all()):
        return float("inf")
    bound = effective_atol(tol, rms(want)) + tol["rtol"] * want.abs()
    return float(((got - want).abs() / bound.clamp_min(1e-300)).max())


def _modules(task: Task, tag: str) -> tuple[Any, Any]:
    """The task's reference and its starting entry module (``source/`` on the path for the
    problem file and the loader it imports)."""
    for name in ("problem", "kb_loader"):
        sys.modules.pop(name, None)
    source = str(task.path / "source")
    sys.path.insert(0, source)
    try:
        ref = load_file_module(task.path / "reference.py", f"_stress_ref_{tag}")
        entry = load_file_module(task.path / "source" / "model_new.py", f"_stress_entry_{tag}")
    finally:
        sys.path.remove(source)
    return ref, entry


def check(task: Task, device: str, tag: str) -> dict[str, Any]:
    """One task's row: each held-out case's worst share of the tolerance, per seed."""
    ref, entry = _modules(task, tag)
    tol = task.spec.tolerances["float32"].model_dump()
    row: dict[str, Any] = {
        "task": task.spec.name,
        "stress": {str(k): v for k, v in ref.INPUT_STRESS.items()},
        "shift": {str(k): v for k, v in getattr(ref, "INPUT_SHIFT", {}).items()},
    }
    for shape in task.spec.shapes.for_device(device, heldout=True):
        label = next((name for name, key, *_ in CASES if shape.get(key)), "plain")
        shares = []
        for seed in (0, 1):
            inputs = ref.make_inputs(shape, torch.float32, device, seed)
            want = ref.reference(*inputs, **shape)
            got = entry.kernelbench_entry(*inputs, **shape)
            shares.append(_share(got, want, tol))
            del inputs, want, got
        row[label] = shares
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=1e9)
    args = parser.parse_args(argv)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows: list[dict[str, Any]] = json.loads(args.out.read_text()) if args.out.exists() else []
    done = {r["task"] for r in rows}
    deadline = time.monotonic() + args.seconds
    specs = sorted(args.root.rglob(TASK_FILE))
    for i, spec in enumerate(specs):
        if time.monotonic() > deadline:
            break
        task = load_task(spec.parent, root=args.root)
        if task.spec.name in done or not any(
            key in s for s in task.spec.shapes.heldout for _, key, *_ in CASES
        ):
            continue
        dev = "cpu" if args.device == "cpu" else "cuda"
        if dev not in task.spec.devices:
            continue
        t0 = time.monotonic()
        try:
            row = check(task, args.device, str(i))
        except Exception as exc:  # a row per task, whatever it raises
            row = {"task": task.spec.name, "error": f"{type(exc).__name__}: {exc}"[:300]}
        row["seconds"] = round(time.monotonic() - t0, 2)
        rows.append(row)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1))
        print(json.dumps(row), flush=True)
        if args.device != "cpu":
            torch.cuda.empty_cache()
    summary(rows)
    return 0


def summary(rows: list[dict[str, Any]]) -> None:
    """Counts of tasks whose baseline meets every case of each kind."""
    ok = [r for r in rows if "error" not in r]
    met = {
        label: f"{sum(all(v <= 1 for v in r[label]) for r in ok if label in r)}"
        f"/{sum(label in r for r in ok)}"
        for label in ("plain", *(name for name, *_ in CASES))
    }
    print(
        f"{len(rows)} tasks with a stress case; {len(rows) - len(ok)} raised; baseline meets "
        + ", ".join(f"{k} {v}" for k, v in met.items())
    )
    for r in ok:
        for label in (name for name, *_ in CASES):
            if not all(v <= 1 for v in r.get(label, [])):
                print(f"  fails {label}: {r['task']} {r['stress']} {r['shift']} shares {r[label]}")


if __name__ == "__main__":
    sys.exit(main())
