"""Validate every bundled task's baseline on a GPU and measure its headroom.

Usage (on a CUDA machine)::

    python tools/gpu_suite.py [--root tasks] [--out suite.json] [SELECTOR ...]

For each task that runs on ``cuda``: the baseline must match the reference on every
tuning and held-out shape (first seed, every dtype); then, per tuning shape, the
baseline is timed against itself with the arena's timing engine (interleaved A/A, L2
flushed, fresh rotating inputs) and its median time is turned into achieved bandwidth
and FLOP/s from the reference module's ``work(shape, dtype)``, against the H200
ceilings measured in docs/benchmarks.md (~4.3 TB/s device copy, ~790 TFLOP/s bf16
matmul). The JSON written to ``--out`` is what docs/tasks.md's table is made from.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from aka.tasks import Task, discover, select
from aka.timing import TimingConfig, measure_pair

COPY_BYTES_PER_S = 4.3e12
MATMUL_FLOPS_PER_S = 790e12


def _load(path: Path, name: str) -> ModuleType:
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


def _call(task: Task, fn: Any, args: tuple[Any, ...], shape: dict[str, int]) -> Any:
    return fn(*args, **shape) if task.spec.pass_shape else fn(*args)


def _n_sets(args: tuple[Any, ...]) -> int:
    one = sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    return max(2, min(8, math.ceil(2 * l2 / max(one, 1))))


def check_task(task: Task, cfg: TimingConfig) -> dict[str, Any]:
    """Correctness on every GPU shape, then A/A timing and headroom per tuning shape."""
    spec = task.spec
    tag = task.key.replace("/", "_")
    ref = _load(task.path / spec.reference, f"ref_{tag}")
    base = getattr(_load(task.path / spec.source_dir / spec.entry_file, f"base_{tag}"), spec.entry_symbol)
    out: dict[str, Any] = {"task": task.key, "type": spec.type, "ok": True, "cases": [], "timing": []}
    for shape in spec.shapes.tuning + spec.shapes.heldout:
        for dtype_name in spec.dtypes:
            dtype = getattr(torch, dtype_name)
            args = tuple(ref.make_inputs(shape, dtype, "cuda", 0))
            expected = _call(task, ref.reference, tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args), shape)
            got = _call(task, base, args, shape)
            torch.cuda.synchronize()
            tol = spec.tolerances[dtype_name]
            ok = bool(torch.allclose(got.double(), expected.double(), atol=tol.atol, rtol=tol.rtol))
            err = float((got.double() - expected.double()).abs().max()) if got.numel() else 0.0
            out["cases"].append({"shape": shape, "dtype": dtype_name, "ok": ok, "max_abs_err": err})
            out["ok"] &= ok
    dtype_name = spec.dtypes[0]
    dtype = getattr(torch, dtype_name)
    for shape in spec.shapes.tuning:
        first = tuple(ref.make_inputs(shape, dtype, "cuda", 1))
        sets = [first] + [tuple(ref.make_inputs(shape, dtype, "cuda", 2 + i)) for i in range(_n_sets(first) - 1)]
        run = lambda i, s=shape, ss=sets: _call(task, base, ss[i], s)  # noqa: E731
        pair = measure_pair(run, run, device="cuda", config=cfg, n_input_sets=len(sets))
        t = pair.baseline.median_s
        row: dict[str, Any] = {
            "shape": shape, "dtype": dtype_name, "median_us": t * 1e6,
            "aa_ratio": pair.speedup, "aa_ci": list(pair.speedup_ci), "samples": pair.baseline.n,
            "method": pair.method,
        }
        work = getattr(ref, "work", None)
        if work is not None:
            w = work(shape, dtype)
            row["gb_per_s"] = w["bytes"] / t / 1e9
            row["tflop_per_s"] = w["flops"] / t / 1e12
            row["sol_fraction"] = max(w["bytes"] / t / COPY_BYTES_PER_S, w["flops"] / t / MATMUL_FLOPS_PER_S)
        out["timing"].append(row)
        torch.cuda.empty_cache()
    return out


def main() -> None:
    """Check every selected task; print a table; write JSON."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("selectors", nargs="*")
    ap.add_argument("--root", type=Path, default=Path("tasks"))
    ap.add_argument("--out", type=Path, default=Path("suite.json"))
    ap.add_argument("--max-time-s", type=float, default=0.4)
    args = ap.parse_args()
    tasks = select(args.root, args.selectors) if args.selectors else discover(args.root)
    cfg = TimingConfig(max_time_s=args.max_time_s, min_samples=10)
    results = []
    for task in tasks:
        if "cuda" not in task.spec.devices:
            continue
        t0 = time.time()
        try:
            r = check_task(task, cfg)
        except Exception as exc:
            r = {"task": task.key, "ok": False, "error": "".join(traceback.format_exception_only(type(exc), exc)).strip()}
        r["wall_s"] = time.time() - t0
        results.append(r)
        for row in r.get("timing", []):
            print(f"{task.key:45s} {json.dumps(row['shape']):32s} {row['median_us']:10.1f} us  A/A {row['aa_ratio']:.4f}"
                  f"  {row.get('gb_per_s', 0):8.0f} GB/s {row.get('tflop_per_s', 0):7.1f} TF/s  SoL {row.get('sol_fraction', 0):.2f}", flush=True)
        if not r["ok"]:
            print(f"{task.key}: FAILED {r.get('error') or [c for c in r['cases'] if not c['ok']][:2]}", flush=True)
        args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(0), "tasks": results}, indent=1))
    bad = [r["task"] for r in results if not r["ok"]]
    print(f"{len(results) - len(bad)}/{len(results)} tasks validated on {torch.cuda.get_device_name(0)}; failed: {bad}")


if __name__ == "__main__":
    main()
