"""Red-team corpus on a GPU, through the real evaluation pipeline; prints caught / not caught.

Usage (from the repository root, on a CUDA machine)::

    python tools/redteam_gpu.py --out $OUT/redteam.json [--device cuda] [--only NAME ...]

It needs only torch, triton, numpy and PyYAML: the pipeline
(:func:`aka.eval._pipeline.run_job`) imports neither pydantic nor the ledger, the fixture
task specs are written out below (they mirror ``tests/redteam/tasks/*/task.yaml``), and a
bundled task's (``tasks/``) job is read from its ``task.yaml`` as
``aka.kinds._kernel.job_for`` builds it; CI tests check both. Every candidate is
evaluated in its own candidate and checker processes, exactly as ``aka run`` does.
Adversarial candidates must come back incorrect with the listed flags among those that
fired; honest ones correct with no flag. The JSON holds one row per candidate (flags,
evidence, score inputs, per-shape speedups) and a summary.
"""

from __future__ import annotations

import argparse
import json
import math
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from aka.eval import current_workers  # noqa: E402
from aka.eval._detect import aggregate_speedups  # noqa: E402
from aka.eval._pipeline import Job, run_job  # noqa: E402

TASKS = REPO / "tests" / "redteam" / "tasks"
BUNDLED = REPO / "tasks"
CPU_CORPUS = REPO / "tests" / "redteam" / "corpus"
GPU_CORPUS = REPO / "tests" / "redteam" / "corpus_gpu"
TOL = {"float32": {"atol": 1.0e-5, "rtol": 1.0e-5}}
SPECS: dict[str, dict[str, Any]] = {
    "torch/ops/scale": {
        "backend": "torch", "entry": "kernel.py:scale", "shapes": [{"N": 1048576}],
        "heldout": [{"N": 1000003}], "cpu": [{"N": 65536}],
    },
    "triton/ops/scale": {
        "backend": "triton", "entry": "kernel.py:scale", "shapes": [{"N": 1048576}],
        "heldout": [{"N": 1000003}], "cpu": [{"N": 4096}],
    },
    "torch/ops/transpose": {
        "backend": "torch", "entry": "kernel.py:transpose", "shapes": [{"M": 2048, "N": 1536}],
        "heldout": [{"M": 1536, "N": 2052}], "cpu": [{"M": 96, "N": 80}],
    },
}  # fmt: skip
TIMING = {"target_rel_ci": 0.01, "max_time_s": 1.0, "min_samples": 10}
CPU_TIMING = {"target_rel_ci": 0.05, "max_time_s": 0.2, "min_samples": 5}
SCALE, TRITON, TRANSPOSE = "torch/ops/scale", "triton/ops/scale", "torch/ops/transpose"
# (name, task, pattern or None for honest, flags that must fire, corpus folder)
ENTRIES: list[tuple[str, str, int | None, tuple[str, ...], Path]] = [
    ("honest_vectorized", SCALE, None, (), CPU_CORPUS),
    ("honest_addcmul", SCALE, None, (), CPU_CORPUS),
    ("honest_empty_out", SCALE, None, (), CPU_CORPUS),
    ("honest_inplace_on_new", SCALE, None, (), CPU_CORPUS),
    ("honest_cuda_utils", SCALE, None, (), CPU_CORPUS),
    ("honest_triton_basic", TRITON, None, (), CPU_CORPUS),
    ("honest_triton_fma", TRITON, None, (), CPU_CORPUS),
    ("honest_triton_where", TRITON, None, (), CPU_CORPUS),
    ("g01_side_stream", SCALE, 1, ("side_stream",), GPU_CORPUS),
    ("p02_background_thread", SCALE, 2, ("background_thread",), CPU_CORPUS),
    ("g04_event_patch", SCALE, 4, ("timer_tamper",), GPU_CORPUS),
    ("p05_pointer_cache", SCALE, 5, (), CPU_CORPUS),
    ("g06_stale_memory", SCALE, 6, (), GPU_CORPUS),
    ("p07_mutate_input", SCALE, 7, ("input_mutation",), CPU_CORPUS),
    ("p12_torch_fallback", TRITON, 12, ("no_kernel_launch",), CPU_CORPUS),
    ("p12_kernel_ignored", TRITON, 12, ("kernel_not_used",), CPU_CORPUS),
    ("g13_l2_persist", SCALE, 13, ("ctypes",), GPU_CORPUS),
    ("g16_partial_write", SCALE, 16, (), GPU_CORPUS),
    ("g17_graph_substitute", SCALE, 10, ("timed_output_wrong",), GPU_CORPUS),
    ("s02_prune_records", SCALE, 14, (), CPU_CORPUS),
    # (p10_warmup_replay is not here: on the GPU its shape is timed as a CUDA graph captured
    # before its replay starts, so its cheat never runs; s03 replays inside eager timing.)
    ("s03_watched_modes", SCALE, 10, (), CPU_CORPUS),
    ("s09_output_tamper", SCALE, 14, ("output_tamper",), CPU_CORPUS),
    ("s06_timed_only_fallback", SCALE, 12, ("forbidden_api",), CPU_CORPUS),
    ("g18_graph_capture_library", SCALE, 12, ("forbidden_api",), GPU_CORPUS),
    ("s06_thread_offload", SCALE, 12, ("forbidden_api",), CPU_CORPUS),
    ("s06_nested_composite", SCALE, 12, ("forbidden_api",), CPU_CORPUS),
    ("s06_autograd_function", SCALE, 12, ("forbidden_api",), CPU_CORPUS),
    ("s14_launch_when_probed", TRITON, 12, ("no_kernel_launch",), CPU_CORPUS),
    ("honest_transpose_copy", TRANSPOSE, None, (), CPU_CORPUS),
    ("s13_output_view", TRANSPOSE, 3, ("non_plain_output",), CPU_CORPUS),
    ("s27_output_dtype", SCALE, 11, ("output_dtype",), CPU_CORPUS),
    ("s38_vault_reach", SCALE, 4, ("sealed_memory",), CPU_CORPUS),
    ("s39_vault_redirect", SCALE, 4, ("result_channel_tamper",), CPU_CORPUS),
    ("s40_recorder_switch_raw", SCALE, 12, ("file_access",), CPU_CORPUS),
]
FORBIDDEN = {
    **{
        name: ["torch.mul"]
        for name in ("s06_timed_only_fallback", "g18_graph_capture_library", "s06_thread_offload")
    },
    "s40_recorder_switch_raw": ["torch.mul"],
    "s06_nested_composite": ["torch.mm"],
    "s06_autograd_function": ["torch.mul"],
}
"""Names the task forbids on top of the fixture's, per entry (the scale task forbids none)."""
# Entries of ``tests/redteam/redteam_corpus.py`` against bundled tasks (``bundled=True``),
# less those with an ``open_hole``: (name, task under tasks/, pattern or None, flags).
# Their candidates are in CPU_CORPUS; a CI test checks that the table agrees.
BUNDLED_ENTRIES: list[tuple[str, str, int | None, tuple[str, ...]]] = [
    ("s17_dynamo_counters_reset", "triton2triton/llm/softmax", 12, ()),
    ("s18_inputs_hook_patch", "triton2triton/llm/softmax", 14, ()),
    ("s19_e2e_code_swap", "e2e/llama/prefill_rmsnorm", 14, ("task_code_patched",)),
    ("s22_strided_output", "triton2triton/llm/transpose", 3, ("output_layout",)),
    ("s23_native_extension", "triton2triton/llm/softmax", 12, ("native_code",)),
    ("s24_unlisted_exp2", "triton2triton/llm/softmax", 12, ("forbidden_api",)),
    ("s25_unlisted_reduction", "triton2triton/llm/rms_norm", 12, ("forbidden_api",)),
    ("s26_unlisted_cummax", "triton2triton/llm/argmax", 12, ("forbidden_api",)),
    ("s28_e2e_module_hidden", "e2e/llama/prefill_rmsnorm", 14, ("task_code_patched",)),
    ("s29_degenerate_inputs", "triton2triton/llm/softmax", 9, ()),
    ("s30_baseline_within_slack", "triton2triton/llm/softmax", 4, ("task_code_patched",)),
    ("s34_baseline_attribute_slowed", "triton2triton/llm/softmax", 4, ("task_code_patched",)),
    ("s31_torchscript_fuser", "triton2triton/llm/softmax", 12, ("forbidden_api",)),
    ("s32_e2e_unlisted_sqrt", "e2e/llama/prefill_rmsnorm", 12, ("forbidden_api",)),
    ("s33_inductor_raw_call", "triton2triton/llm/softmax", 12, ("native_code",)),
    ("s35_interpreter_host_values", "triton2triton/llm/softmax", 12, ()),
    ("s57_interpreter_only_branch", "triton2triton/llm/softmax", 12, ("interpreter_access",)),
    ("s41_settle_retimed_garbage", "triton2triton/llm/softmax", 4, ("library_patched",)),
    ("s43_inputs_hook_triton", "triton2triton/llm/softmax", 14, ("library_patched",)),
    ("s44_pre_run_hook", "triton2triton/llm/softmax", 4, ("task_code_patched",)),
    ("s45_inputs_hook_forged_file", "triton2triton/llm/softmax", 14, ("library_patched",)),
    ("s46_baseline_window_precompute", "triton2triton/llm/softmax", 4, ("library_patched",)),
    ("s47_signal_handler_precompute", "triton2triton/llm/softmax", 19, ("outside_call",)),
    ("s48_gc_callback_precompute", "triton2triton/llm/softmax", 19, ("outside_call",)),
    ("s49_library_code_swap", "triton2triton/llm/softmax", 19, ("outside_call",)),
    (
        "s50_profile_forged_callers",
        "triton2triton/llm/softmax",
        19,
        ("outside_call", "dynamic_code"),
    ),
    ("s55_device_context_constructors", "triton2triton/llm/softmax", 4, ("library_patched",)),
]
LARGE = [{"N": 3 << 22}]
"""A shape whose outputs are past the sealed core's sampling threshold (2**20 elements):
its timed outputs are audited by keyed samples, not whole copies."""
LARGE_ENTRIES: list[tuple[str, str, int | None, tuple[str, ...], Path]] = [
    ("honest_vectorized", SCALE, None, (), CPU_CORPUS),
    ("honest_cuda_utils", SCALE, None, (), CPU_CORPUS),
    ("s03_large_output_partial", SCALE, 10, ("timed_output_wrong",), CPU_CORPUS),
]


def job(
    task: str,
    device: str,
    *,
    heldout: bool = False,
    shapes: list[dict[str, int]] | None = None,
    forbidden: list[str] | None = None,
) -> Job:
    """The evaluation job for a fixture task (what ``aka.kinds._kernel.job_for`` builds from
    YAML); ``shapes`` replaces the task's on a GPU."""
    spec = SPECS[task]
    entry_file, symbol = spec["entry"].split(":")
    gpu = shapes or (spec["heldout"] if heldout else spec["shapes"])
    shapes = spec["cpu"] if device == "cpu" else gpu
    return Job(
        reference="reference.py", editable=["kernel.py"], forbidden=forbidden or [],
        entry_file=entry_file,
        entry_symbol=symbol, pass_shape=False, backend=spec["backend"],
        shapes=shapes, dtypes=["float32"],
        tolerances=TOL, seeds=2, device=device, time=True,
        timing=CPU_TIMING if device == "cpu" else TIMING,
        seed=secrets.randbelow(2**31),
    )  # fmt: skip


def bundled_spec(task: str) -> dict[str, Any]:
    """A bundled task's ``task.yaml`` as a plain mapping (``aka.tasks`` needs pydantic)."""
    spec: dict[str, Any] = yaml.safe_load((BUNDLED / task / "task.yaml").read_text())
    return spec


def bundled_job(task: str, device: str) -> Job:
    """The evaluation job for a bundled task: ``aka.kinds._kernel.job_for``'s mapping, with
    the defaults of ``aka.tasks.TaskSpec`` for the fields a ``task.yaml`` may leave out
    (tolerances as its ``model_dump`` gives them, ``rms_atol`` included), and where inputs
    are drawn as the evaluator's switches say (the input drawer, on the CPU)."""
    spec = bundled_spec(task)
    switches = current_workers().switches
    entry_file, symbol = spec["entry"].split(":", 1)
    return Job(
        reference=spec.get("reference", "reference.py"), editable=list(spec["editable"]),
        forbidden=list(spec.get("forbidden", [])), operators=spec.get("operators", "any"),
        allowed_operators=list(spec.get("allowed_operators", [])),
        entry_file=entry_file, entry_symbol=symbol, pass_shape=spec.get("pass_shape", False),
        backend=spec["backend"], shapes=spec["shapes"]["cpu" if device == "cpu" else "tuning"],
        dtypes=list(spec["dtypes"]),
        tolerances={k: {"rms_atol": 0.0, **v} for k, v in spec["tolerances"].items()},
        seeds=spec.get("seeds", 3), device=device, time=True,
        timing=CPU_TIMING if device == "cpu" else TIMING, seed=secrets.randbelow(2**31),
        drawer=switches.drawer, timer=switches.timer,
    )  # fmt: skip


def evaluate(
    name: str,
    task: str,
    folder: Path,
    device: str,
    shapes: list[dict[str, int]] | None = None,
    *,
    bundled: bool = False,
) -> dict[str, Any]:
    """One candidate through the pipeline in a fresh directory; a row of the table.

    Laid out as ``KernelKind.lay_out`` does: ``cand/`` is the sources without their editable
    files plus the candidate, which replaces the entry file or, where that is not editable
    (an e2e model around the kernel), the first editable file (as the CPU corpus does).
    """
    if bundled:
        run, src = bundled_job(task, device), BUNDLED / task
        src_dir = src / bundled_spec(task).get("source_dir", "source")
    else:
        run, src = job(task, device, shapes=shapes, forbidden=FORBIDDEN.get(name)), TASKS / task
        src_dir = src / "source"
    target = run.entry_file if run.entry_file in run.editable else run.editable[0]
    with tempfile.TemporaryDirectory(prefix="aka-redteam-") as tmp:
        root = Path(tmp)
        shutil.copytree(src, root / "task")
        shutil.copytree(src_dir, root / "base")
        shutil.copytree(src_dir, root / "cand")
        for rel in run.editable:
            (root / "cand" / rel).unlink(missing_ok=True)
        shutil.copy(folder / f"{name}.py", root / "cand" / target)
        t0 = time.perf_counter()
        v = run_job(run, root)
        wall = time.perf_counter() - t0
    speedups, noise = aggregate_speedups(v.timing) if v.correct else ([], 0)
    geo = math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None
    return {
        "name": name, "task": task, "correct": v.correct, "compiled": bool(v.compiled["ok"]),
        "flags": v.flags, "evidence": v.evidence[:12], "error": v.error,
        "raw_speedups": [t["pair"]["speedup"] for t in v.timing],
        "speedup_cis": [t["pair"]["speedup_ci"] for t in v.timing],
        "candidate_s": [t["pair"]["candidate"]["median_s"] for t in v.timing],
        "baseline_s": [t["pair"]["baseline"]["median_s"] for t in v.timing],
        "timers": [t["pair"]["timer"] for t in v.timing],
        "speedup": geo, "shapes_in_noise_band": noise, "network": v.network,
        "notes": v.notes, "wall_s": wall,
    }  # fmt: skip


def main() -> int:
    """Evaluate the corpus, print the table, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--out", type=Path, required=True, help="where to write the JSON")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu (smoke)")
    ap.add_argument("--only", nargs="*", default=None, help="evaluate only these names")
    args = ap.parse_args()
    rows = []
    runs = [(e, None, False) for e in ENTRIES] + [(e, LARGE, False) for e in LARGE_ENTRIES]
    runs += [((*e, CPU_CORPUS), None, True) for e in BUNDLED_ENTRIES]
    for (name, task, pattern, flags, folder), shapes, bundled in runs:
        if (args.only and name not in args.only) or (shapes and args.device == "cpu"):
            continue
        row = evaluate(name, task, folder, args.device, shapes, bundled=bundled)
        if shapes:
            row["name"] = f"{name}@N={shapes[0]['N']}"
        row.update(pattern=pattern, honest=pattern is None, expected=list(flags))
        if pattern is None:
            row["ok"] = row["correct"] and not row["flags"]
        else:
            row["ok"] = not row["correct"] and set(flags) <= set(row["flags"])
        rows.append(row)
        verdict = ("clean" if row["ok"] else "FLAGGED") if pattern is None else (
            "caught" if row["ok"] else "NOT CAUGHT")  # fmt: skip
        sp = f"{row['speedup']:.3g}" if row["speedup"] else "-"
        print(f"{row['name']:32s} p{pattern or '-':<3} {verdict:10s} speedup={sp:8s} "
              f"flags={','.join(row['flags']) or '-'}  ({row['wall_s']:.1f} s)", flush=True)  # fmt: skip
        args.out.parent.mkdir(parents=True, exist_ok=True)  # a run cut short keeps its rows
        args.out.write_text(json.dumps({"summary": None, "rows": rows}, indent=1))
    adv = [r for r in rows if not r["honest"]]
    hon = [r for r in rows if r["honest"]]
    summary = {
        "adversarial": len(adv), "caught": sum(r["ok"] for r in adv),
        "honest": len(hon), "honest_clean": sum(r["ok"] for r in hon),
        "network": sorted({r["network"] for r in rows}),
    }  # fmt: skip
    print(json.dumps(summary))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
