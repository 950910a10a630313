"""End-to-end serving benchmark: a kernel's speedup in the model next to its speedup alone.

Usage (on the GPU machine, from the repository root)::

    python3 tools/e2e_bench.py --out e2e.json [--device cuda] [--max-time-s 3] [TASK ...]

For every task under ``tasks/e2e/llama/`` (or the named ones) and every tuning shape
(``cpu`` shapes with ``--device cpu``, a plumbing check), it pairs the task's starting
kernel (the baseline) with the known-faster kernel under ``tools/e2e_candidates/<task>/``
(the candidate) and measures, with :func:`aka.timing.measure_pair` exactly as the
evaluator does (interleaved, L2 flushed, noise-based stop, bootstrap CI on the ratio of
medians):

- correctness: both models' logits against the task's fp32 reference, per dtype, at the
  task's tolerance (max abs error recorded);
- ``e2e``: the task's entry (the whole prefill forward or decode step) on rotating input
  sets, once with the engine's own choice of CUDA graphs (``auto``, what an arena
  evaluation does) and once with graphs forced (``graph``, launch overhead removed: how a
  serving engine runs a decode step);
- ``isolated``: the kernel alone on the very activations the model hands it in one call
  of the entry (every call of one forward, in order), recorded from the baseline model;
- tokens per second for both arms (``B*S / time`` for prefill, ``B / time`` for a decode
  step), the kernel's share of the baseline forward, and the end-to-end speedup that
  share predicts from the isolated one (Amdahl: ``1 / (1 - f + f / s)``).

It prints a Markdown table and writes everything (without raw samples) to ``--out``.
Needs torch, triton, numpy and pyyaml only: the evaluator's CLI dependencies (pydantic,
duckdb, blake3) are not imported.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from aka.timing import TimingConfig, device_fingerprint, measure_pair  # noqa: E402

TASKS_DIR = REPO / "tasks" / "e2e" / "llama"
CANDIDATES_DIR = REPO / "tools" / "e2e_candidates"
SEED = 1234


def load_module(path: Path) -> ModuleType:
    """Import ``path`` under a name unique to it (baseline and candidate never clash)."""
    tag = hashlib.blake2s(str(path.resolve()).encode(), digest_size=6).hexdigest()
    name = f"_aka_e2e_bench_{path.stem}_{tag}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tokens_per_call(shape: dict[str, int]) -> int:
    """Tokens one call of the entry produces logits for: ``B*S`` (prefill) or ``B`` (decode).

    A prefill forward processes every prompt token; a decode step adds one token per
    sequence, so tokens per second is this divided by the call's median time.
    """
    return shape["B"] * shape["S"] if "S" in shape else shape["B"]


def amdahl(share: float, isolated: float) -> float:
    """End-to-end speedup when a fraction ``share`` of the time gets ``isolated`` faster."""
    return 1.0 / ((1.0 - share) + share / isolated)


def n_input_sets(inputs: tuple[Any, ...], device: str) -> int:
    """The evaluator's rule: enough input sets to exceed twice the L2 (2 to 16; 2 on CPU)."""
    import torch

    if not device.startswith("cuda"):
        return 2
    size = sum(a.numel() * a.element_size() for a in inputs if isinstance(a, torch.Tensor))
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 << 20)
    return max(2, min(16, math.ceil(2 * l2 / max(size, 1))))


def candidate_source(task_dir: Path, spec: dict[str, Any], dest: Path) -> Path:
    """The task's sources with the editable files taken from the candidate folder."""
    src = CANDIDATES_DIR / task_dir.name
    shutil.copytree(task_dir / spec.get("source_dir", "source"), dest)
    for rel in spec["editable"]:
        shutil.copy2(src / rel, dest / rel)
    return dest


def swapped_kernel(model: ModuleType) -> str:
    """The name of the ``Ops`` field the task's model takes from its editable kernel."""
    default = model.llama.Ops()
    for field in dataclasses.fields(model.OPS):
        if getattr(model.OPS, field.name) is not getattr(default, field.name):
            return field.name
    raise ValueError(f"{model.__file__}: OPS replaces no kernel")


def record_calls(
    model: ModuleType, entry: Callable[..., Any], inputs: tuple[Any, ...], shape: dict[str, int]
) -> list[tuple[Any, ...]]:
    """The arguments of every call of the model's swapped kernel during one entry call."""
    name = swapped_kernel(model)
    kernel = getattr(model.OPS, name)
    calls: list[tuple[Any, ...]] = []

    def recorder(*args: Any) -> Any:
        calls.append(tuple(a.clone() for a in args))
        return kernel(*args)

    original = model.OPS
    setattr(model, "OPS", original.with_kernels(**{name: recorder}))  # noqa: B010
    try:
        entry(*inputs, **shape)
    finally:
        setattr(model, "OPS", original)  # noqa: B010
    return calls


def check(
    ref: ModuleType,
    fns: dict[str, Callable[..., Any]],
    spec: dict[str, Any],
    shape: dict[str, int],
    device: str,
) -> list[dict[str, Any]]:
    """Each arm's logits against the reference, per dtype, at the task's tolerance."""
    import torch

    out = []
    for dtype_name in spec["dtypes"]:
        tol = spec["tolerances"][dtype_name]
        inputs = ref.make_inputs(shape, getattr(torch, dtype_name), device, SEED)
        expected = ref.reference(*[a.clone() for a in inputs], **shape).double()
        for arm, fn in fns.items():
            got = fn(*inputs, **shape).double()
            err = float((got - expected).abs().max())
            ok = bool(torch.allclose(got, expected, atol=tol["atol"], rtol=tol["rtol"]))
            out.append({"arm": arm, "dtype": dtype_name, "max_abs_err": err, "ok": ok, **tol})
    return out


def _pair(
    base: Callable[[int], Any], cand: Callable[[int], Any], device: str, cfg: TimingConfig, n: int
) -> dict[str, Any]:
    """One measured pair without raw samples, or ``{"error": ...}``: one failed pair (a
    graph capture, say) must not cost the rest of a single-shot GPU session."""
    try:
        data = measure_pair(base, cand, device=device, config=cfg, n_input_sets=n).to_dict()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    for arm in ("baseline", "candidate"):
        data[arm].pop("samples_s", None)
    return dict(data)


@dataclasses.dataclass
class Loaded:
    """One task's spec, reference and both models, loaded once for all its shapes."""

    name: str
    spec: dict[str, Any]
    ref: ModuleType
    models: dict[str, ModuleType]
    fns: dict[str, Callable[..., Any]]


def load_task(task_dir: Path, workdir: Path) -> Loaded:
    """Load the reference, the baseline model and the candidate model (under ``workdir``)."""
    spec = yaml.safe_load((task_dir / "task.yaml").read_text())
    entry_file, symbol = spec["entry"].split(":")
    cand_dir = candidate_source(task_dir, spec, workdir / task_dir.name)
    models = {
        "baseline": load_module(task_dir / spec.get("source_dir", "source") / entry_file),
        "candidate": load_module(cand_dir / entry_file),
    }
    return Loaded(
        name=task_dir.name,
        spec=spec,
        ref=load_module(task_dir / spec.get("reference", "reference.py")),
        models=models,
        fns={arm: getattr(m, symbol) for arm, m in models.items()},
    )


def measure_shape(
    task: Loaded, shape: dict[str, int], device: str, config: TimingConfig, modes: list[str]
) -> dict[str, Any]:
    """Correctness, end-to-end pairs (one per graph mode) and the isolated pair."""
    import torch

    result: dict[str, Any] = {"task": f"e2e/llama/{task.name}", "shape": shape}
    result["correctness"] = check(task.ref, task.fns, task.spec, shape, device)
    dtype = getattr(torch, task.spec["dtypes"][0])
    result["dtype"] = task.spec["dtypes"][0]
    first = task.ref.make_inputs(shape, dtype, device, SEED)
    n = n_input_sets(first, device)
    sets = [first] + [task.ref.make_inputs(shape, dtype, device, SEED + 7 * i) for i in range(1, n)]

    def runner(fn: Callable[..., Any]) -> Callable[[int], Any]:
        return lambda i: fn(*sets[i], **shape)

    result["e2e"] = {}
    for mode in modes:
        cfg = dataclasses.replace(config, use_cuda_graph={"auto": None, "graph": True}[mode])
        result["e2e"][mode] = _pair(
            runner(task.fns["baseline"]), runner(task.fns["candidate"]), device, cfg, n
        )
    base_model, cand_model = task.models["baseline"], task.models["candidate"]
    name = swapped_kernel(base_model)
    kernels = [getattr(m.OPS, name) for m in (base_model, cand_model)]
    calls = [record_calls(base_model, task.fns["baseline"], s, shape) for s in sets]
    result["kernel"] = name
    result["kernel_calls"] = [list(a[0].shape) for a in calls[0]]

    def seq(kernel: Callable[..., Any]) -> Callable[[int], Any]:
        return lambda i: [kernel(*args) for args in calls[i]]

    # Graphs where the device has them: the kernel's GPU time, without launch gaps.
    iso_cfg = dataclasses.replace(config, use_cuda_graph=device.startswith("cuda") or None)
    result["isolated"] = _pair(seq(kernels[0]), seq(kernels[1]), device, iso_cfg, n)
    _derive(result, shape)
    return result


def _derive(result: dict[str, Any], shape: dict[str, int]) -> None:
    """Tokens per second, the kernel's share of the forward, and Amdahl's prediction."""
    tokens = tokens_per_call(shape)
    iso = result["isolated"]
    result["tokens_per_call"] = tokens
    for pair in result["e2e"].values():
        if "error" in pair:
            continue
        base_s, cand_s = pair["baseline"]["median_s"], pair["candidate"]["median_s"]
        pair["tokens_per_s"] = {"baseline": tokens / base_s, "candidate": tokens / cand_s}
        if "error" not in iso:
            share = min(iso["baseline"]["median_s"] / base_s, 1.0)
            pair["kernel_share"] = share
            pair["amdahl_speedup"] = amdahl(share, iso["speedup"])


def bench(
    tasks: list[str],
    *,
    device: str,
    shapes: str,
    max_time_s: float,
    modes: list[str],
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run every task's shapes; returns the JSON-able record."""
    config = TimingConfig(max_time_s=max_time_s, seed=SEED)
    if device == "cpu":
        config = dataclasses.replace(config, warmup=1, min_samples=3, target_rel_ci=0.5)
        modes = [m for m in modes if m != "graph"]
    results = []
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="aka-e2e-") as tmp:
        for name in tasks:
            task = load_task(TASKS_DIR / name, Path(tmp))
            for shape in task.spec["shapes"][shapes]:
                log(f"{name} {shape} ...")
                results.append(measure_shape(task, shape, device, config, modes))
    return {
        "benchmark": "tools/e2e_bench.py",
        "command": " ".join(["python3", "tools/e2e_bench.py", *sys.argv[1:]]),
        "device": device_fingerprint(device),
        "timing_config": dataclasses.asdict(config),
        "wall_s": time.time() - start,
        "results": results,
    }


def _ci(pair: dict[str, Any]) -> str:
    if "error" in pair:
        return f"error: {pair['error'][:60]}"
    lo, hi = pair["speedup_ci"]
    return f"{pair['speedup']:.3f} [{lo:.3f}, {hi:.3f}]"


def _row(task: str, work: str, mode: str, correct: str, p: dict[str, Any], iso: str) -> str:
    if "error" in p:
        return f"| {task} | {work} | {mode} | {correct} | - | - | {_ci(p)} | {iso} | - | - |"
    tps = p["tokens_per_s"]
    share, predicted = p.get("kernel_share"), p.get("amdahl_speedup")
    return (
        f"| {task} | {work} | {mode} ({p['timer']}) | {correct} "
        f"| {tps['baseline']:,.0f} | {tps['candidate']:,.0f} | {_ci(p)} | {iso} "
        f"| {'-' if share is None else f'{share:.1%}'} "
        f"| {'-' if predicted is None else f'{predicted:.3f}'} |"
    )


def render(record: dict[str, Any]) -> str:
    """A Markdown table: one row per task, shape and graph mode."""
    lines = [
        "| task | shape | mode | correct | tok/s base | tok/s cand | e2e speedup [95% CI] "
        "| isolated speedup [95% CI] | kernel share | Amdahl |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in record["results"]:
        work = ", ".join(f"{k}={r['shape'][k]}" for k in ("B", "S", "CTX") if k in r["shape"])
        correct = "yes" if all(c["ok"] for c in r["correctness"]) else "NO"
        for mode, p in r["e2e"].items():
            lines.append(_row(r["task"], work, mode, correct, p, _ci(r["isolated"])))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task names under tasks/e2e/llama (default: all)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--shapes", default=None, help="shape list (default: tuning; cpu on cpu)")
    parser.add_argument("--max-time-s", type=float, default=3.0, help="sampling budget per pair")
    parser.add_argument("--modes", default="auto,graph", help="e2e graph modes: auto,graph")
    parser.add_argument("--md", type=Path, default=None, help="also write the table here")
    args = parser.parse_args(argv)
    names = args.tasks or sorted(p.parent.name for p in TASKS_DIR.glob("*/task.yaml"))
    missing = [n for n in names if not (CANDIDATES_DIR / n).is_dir()]
    if missing:
        parser.error(f"no candidate under {CANDIDATES_DIR} for {missing}")
    shapes = args.shapes or ("cpu" if args.device == "cpu" else "tuning")
    record = bench(
        names,
        device=args.device,
        shapes=shapes,
        max_time_s=args.max_time_s,
        modes=[m for m in args.modes.split(",") if m],
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1, sort_keys=True))
    table = render(record)
    print(table)
    if args.md is not None:
        args.md.write_text(table + "\n")
    failed = [r["task"] for r in record["results"] if not all(c["ok"] for c in r["correctness"])]
    if failed:
        print(f"correctness failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
