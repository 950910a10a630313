"""How imported AgentKernelArena tasks time with aka: the helper and what calls it.

Upstream runners call timing helpers that AgentKernelArena generates into each run's
workspace; the task folders hold stubs. The importer puts aka's helper in their place:

- between a runner's ``# >>> AKA-GENERATED`` and ``# <<< AKA-GENERATED <<<`` markers,
  :data:`AKA_TIMING_HELPER` (``aka_time_ms``, ``aka_time_samples``), with the upstream
  names the runner calls (:data:`AKA_COMPAT_HELPERS`) defined over it;
- for pytest-driven tasks (rocmbench), ``performance_utils_pytest.py``: the API their
  tests import (``do_bench_config``, ``PytestBenchmarker``, ``save_all_benchmark_results``),
  timed by the same helper, writing aka's report beside upstream's
  (:data:`AKA_PYTEST_PERF`).

The helper asks for the evaluator's timing gate around its timed loops
(``timing_gate: helper``; :mod:`aka.kinds._command`), which :func:`times_with_helper`
tells the importer it may rely on.
"""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = [
    "AKA_COMPAT_HELPERS",
    "AKA_PYTEST_PERF",
    "AKA_TIMING_HELPER",
    "BEGIN",
    "END",
    "PYTEST_PERF",
    "PYTEST_REPORT",
    "inject_helper",
    "place_pytest_helper",
    "times_with_helper",
]

BEGIN, END = "# >>> AKA-GENERATED", "# <<< AKA-GENERATED <<<"
PYTEST_PERF = "performance_utils_pytest.py"
PYTEST_REPORT = "perf/performance_report.json"
"""Where :data:`AKA_PYTEST_PERF` writes aka's report: the ``perf`` folder upstream's tests
pass to ``save_all_benchmark_results``, beside the test file at the task's top."""

AKA_TIMING_HELPER = '''# aka timing helper, placed here by `aka tasks import aka`: timed runs with the L2
# flushed before each one; CUDA events on a GPU, perf_counter elsewhere. Under aka's
# evaluator the timed runs wait for the device to be theirs alone (the timing gate).
def _aka_gate(message):
    """Ask aka's evaluator for the device (b"g", then wait for its answer) or give it back
    (b"d"), through the pipes named by AKA_TIMING_GATE; nothing when run by hand."""
    import os

    pipes = os.environ.get("AKA_TIMING_GATE")
    if not pipes:
        return
    ask, answer = (int(fd) for fd in pipes.split(","))
    os.write(ask, message)
    if message == b"g" and not os.read(answer, 1):
        raise RuntimeError("aka's timing gate closed without an answer")


def aka_time_samples(fn, *args, warmup=3, reps=20, flush_mb=256, **kwargs):
    """Milliseconds of each of reps runs of fn(*args, **kwargs), after warmup runs."""
    import time

    try:
        import torch

        cuda = torch.cuda.is_available()
    except ImportError:
        torch, cuda = None, False
    flush = torch.empty(flush_mb << 20, dtype=torch.uint8, device="cuda") if cuda else None
    # The first call may autotune (Triton times each config and keeps the fastest): it
    # needs the device alone as much as the timed runs, or the baseline and the
    # candidate each keep whichever config the others' load favoured.
    _aka_gate(b"g")
    try:
        for _ in range(warmup):
            fn(*args, **kwargs)
        times = []
        for _ in range(max(1, int(reps))):
            if cuda:
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn(*args, **kwargs)
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                fn(*args, **kwargs)
                times.append((time.perf_counter() - t0) * 1e3)
    finally:
        _aka_gate(b"d")
    return times


def aka_near_median_mean(times):
    """The mean of the runs within half their median (at least 1 us) of it.

    CUDA events resolve about half a microsecond, so a run of a 12.2 us kernel reads
    12.0 or 12.5, depending on where the timer's tick falls, in the proportion of the
    fraction: a median lands on one step or the other, 4 % apart, while a mean counts
    the proportion and sees the 12.2. Runs far from the median (a preemption, a clock
    change) are dropped first, which a plain mean would keep and a trimmed one would
    pay for with a bias towards the commoner step."""
    s = sorted(times)
    n = len(s)
    median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    window = max(abs(median) / 2, 0.001)
    near = [t for t in s if abs(t - median) <= window]
    return sum(near) / len(near)


def aka_time_ms(fn, *args, warmup=3, reps=20, flush_mb=256, **kwargs):
    """Milliseconds of fn(*args, **kwargs) over reps runs after warmup runs: the mean of
    the runs near their median (aka_near_median_mean)."""
    return aka_near_median_mean(aka_time_samples(fn, *args, warmup=warmup, reps=reps, flush_mb=flush_mb, **kwargs))
'''

AKA_COMPAT_HELPERS = {
    "_measure_cuda_event_fallback": '''

def _measure_cuda_event_fallback(fn, repetition=100, *args, **kwargs):
    """The name this runner calls: per-run milliseconds of fn(), timed by aka."""
    return aka_time_samples(fn, warmup=0, reps=repetition)
''',
    "_benchmark_cuda_graph_or_events": '''

def _benchmark_cuda_graph_or_events(fn, warmup=10, repetition=100, *args, timed_run=None, **kwargs):
    """The name this runner calls: (milliseconds, metadata) of fn(), timed by aka."""
    ms = aka_time_ms(fn, warmup=warmup, reps=repetition)
    if timed_run is not None and hasattr(timed_run, "_bind"):
        timed_run._bind(fn, fn())
    return ms, {"benchmark_method": "aka_time_ms", "benchmark_samples": int(repetition)}
''',
}
"""Upstream helper names runners call, defined over aka's helper (by name, so a block that
defines them keeps working after the block is replaced)."""

AKA_PYTEST_PERF = (
    '''"""The benchmark API rocmbench tests import, written by `aka tasks import aka` in place
of AgentKernelArena's generated stub and timed by aka's helper: each benchmark's runs are
timed with aka_time_samples; save_all_benchmark_results writes upstream's
benchmark_results.json and aka's performance_report.json (one test case per benchmark,
the mean of its runs near their median) in the folder it is given."""

import json
import os
from dataclasses import dataclass


'''
    + AKA_TIMING_HELPER
    + """

_RESULTS = []


@dataclass
class BenchConfig:
    warm_up: int = 10
    repetition: int = 100


def do_bench_config(warm_up=10, repetition=100):
    return BenchConfig(warm_up=int(warm_up), repetition=int(repetition))


def _stats(times, config):
    s = sorted(times)
    n = len(s)
    mid = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {"mean": sum(s) / n, "median": mid, "near_median_mean": aka_near_median_mean(s), "p90": s[min(n - 1, int(round(0.9 * (n - 1))))],
            "min": s[0], "max": s[-1], "repetition": config.repetition, "warm_up": config.warm_up}


class PytestBenchmarker:
    def __init__(self, op_callable, op_name, config):
        self.op_callable, self.op_name, self.config = op_callable, op_name, config

    def run_benchmark(self, current_params_dict, gbps_calculator=None, tflops_calculator=None,
                      baseline_callable=None):
        cfg = self.config
        times = aka_time_samples(self.op_callable, warmup=cfg.warm_up, reps=cfg.repetition)
        stats = _stats(times, cfg)
        result = {"op_name": self.op_name, "params": current_params_dict, "timing_ms": stats,
                  "benchmark_method": "aka_time_samples"}
        for key, calc in (("gbps", gbps_calculator), ("tflops", tflops_calculator)):
            if calc is not None:
                try:
                    result[key] = float(calc(current_params_dict, stats["mean"]))
                except Exception as exc:
                    result[key + "_error"] = str(exc)
        if baseline_callable is not None:
            base = _stats(aka_time_samples(baseline_callable, warmup=cfg.warm_up,
                                           reps=cfg.repetition), cfg)
            result["baseline_timing_ms"] = base
            result["speedup_ratio"] = base["mean"] / stats["mean"] if stats["mean"] > 0 else 1.0
        _RESULTS.append(result)
        return result


def _case_id(result, seen):
    params = result.get("params") or {}
    label = ",".join(f"{k}={params[k]}" for k in sorted(params, key=str))
    case = f"{result['op_name']}[{label}]"
    seen[case] = seen.get(case, 0) + 1
    return case if seen[case] == 1 else f"{case}#{seen[case]}"


def save_all_benchmark_results(output_directory):
    os.makedirs(output_directory, exist_ok=True)
    with open(os.path.join(output_directory, "benchmark_results.json"), "w") as f:
        json.dump(_RESULTS, f, indent=2, sort_keys=True, default=str)
    seen, report = {}, []
    for result in _RESULTS:
        params = {k: v for k, v in (result.get("params") or {}).items()
                  if isinstance(v, (int, float, str, bool))}
        report.append({"test_case_id": _case_id(result, seen),
                       "execution_time_ms": result["timing_ms"]["near_median_mean"], "params": params})
    with open(os.path.join(output_directory, "performance_report.json"), "w") as f:
        json.dump(report, f, indent=2)
"""
)
"""``performance_utils_pytest.py`` as aka writes it (the upstream API, aka's timing)."""


def _helper_block(old: str, runner: str) -> str:
    """aka's helper, the upstream names the runner calls defined over it, and any other
    definition the old block had kept as written."""
    try:
        defs = [n for n in ast.parse(old).body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    except SyntaxError:
        defs = []
    kept = [ast.get_source_segment(old, n) or "" for n in defs if n.name not in AKA_COMPAT_HELPERS]
    called = [name for name in AKA_COMPAT_HELPERS if f"{name}(" in runner]
    compat = "".join(AKA_COMPAT_HELPERS[name] for name in called)
    extra = "".join(f"\n\n{src}\n" for src in kept)
    return f"{AKA_TIMING_HELPER}{compat}{extra}"


def inject_helper(folder: Path) -> list[str]:
    """Place aka's timing helper between the generated-code markers; returns files changed."""
    changed = []
    for path in sorted((folder / "scripts").rglob("*.py")):
        text = path.read_text()
        if BEGIN not in text or END not in text:
            continue
        head, rest = text.split(BEGIN, 1)
        marker_rest, _, block = rest.partition("\n")
        old, tail = block.split(END, 1)
        new = _helper_block(old, head + tail)
        path.write_text(f"{head}{BEGIN}{marker_rest}\n{new}{END}{tail}")
        changed.append(path.relative_to(folder).as_posix())
    return changed


HELPER_NAMES = ("aka_time_ms", "aka_time_samples", *AKA_COMPAT_HELPERS, "PytestBenchmarker")
"""What a runner calls to time through aka's helper (which asks for the timing gate)."""


def times_with_helper(folder: Path) -> bool:
    """Whether a script of the task calls aka's helper outside what aka wrote (many
    upstream runners time with their own CUDA events instead)."""
    for path in folder.rglob("*.py"):
        if path.name == PYTEST_PERF:
            continue
        text = path.read_text(errors="replace")
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            text = head + rest.split(END, 1)[1]
        if any(f"{name}(" in text for name in HELPER_NAMES):
            return True
    return False


def place_pytest_helper(folder: Path) -> bool:
    """Write aka's ``performance_utils_pytest.py`` where a test imports it (the folder
    holds upstream's stub, or nothing); True when written."""
    users = [
        p for p in folder.rglob("*.py")
        if p.name != PYTEST_PERF and "performance_utils_pytest" in p.read_text(errors="replace")
    ]  # fmt: skip
    for where in sorted({p.parent for p in users}):
        (where / PYTEST_PERF).write_text(AKA_PYTEST_PERF)
    return bool(users)
