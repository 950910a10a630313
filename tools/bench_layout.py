"""How much a host-bound path's time moves from one process to the next, with every process
laid out at random and laid out alike (``aka.kinds._command.layout``).

A command task times each round in a new process, and its small cases are mostly the
host launching one kernel: a Python launcher hashing its arguments into a key, looking
the compiled kernel up in a dict, reading attributes, calling it. This runs such a path
(no GPU, no Triton: the same kind of host work) in ``--processes`` fresh processes per
setting through ``run_command``, the settings alternating, and reports each setting's
median time per launch-like call and its spread between processes (coefficient of
variation; the 10th to 90th percentile over the median, which one process the machine
slowed does not move; min, max). Usage::

    python tools/bench_layout.py --processes 60 --out layout.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from aka.kinds._command import layout, run_command

# A launcher-like host path; prints nanoseconds per call (median of 50 timed batches).
PROBE = """import json, time, statistics
class Kernel:
    def __init__(self):
        self.cache, self.consts = {}, {"BLOCK": 128, "num_warps": 4, "num_stages": 2}
    def key(self, *args):
        spec = tuple((type(a).__name__, a if isinstance(a, int) else 0) for a in args)
        return spec + tuple(sorted(self.consts.items()))
    def run(self, *args):
        k = self.key(*args)
        fn = self.cache.get(k)
        if fn is None:
            fn = self.cache[k] = lambda *a: len(a)
        return fn(*args)
kernel, batches = Kernel(), []
for _ in range(60):
    t = time.perf_counter_ns()
    for i in range(2000):
        kernel.run(i & 7, 3, 5.0, "x")
    batches.append(time.perf_counter_ns() - t)
print(json.dumps(statistics.median(batches[10:]) / 2000))
"""


def measure(processes: int) -> dict[str, object]:
    how = layout()
    times: dict[str, list[float]] = {"random": [], "fixed": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "probe.py").write_text(PROBE)
        for r in range(processes):
            order = ("random", "fixed") if r % 2 == 0 else ("fixed", "random")
            for setting in order:
                cmd = f"{sys.executable} probe.py > out.txt"
                ok, detail, _ = run_command(cmd, folder, device="cpu", timeout=120,
                                            fixed=setting == "fixed")  # fmt: skip
                if not ok:
                    raise SystemExit(detail)
                times[setting].append(float((folder / "out.txt").read_text()))
    out: dict[str, object] = {"processes": processes, "layout_here": how}
    for setting, ns in times.items():
        tenth = statistics.quantiles(ns, n=10)
        out[setting] = {
            "median_ns": round(statistics.median(ns), 1),
            "cv": round(statistics.stdev(ns) / statistics.mean(ns), 4),
            # robust to a process the machine slowed: the middle 80 % over the median
            "p10_p90": round((tenth[8] - tenth[0]) / statistics.median(ns), 4),
            "min_ns": round(min(ns), 1),
            "max_ns": round(max(ns), 1),
            "ns": [round(x, 1) for x in ns],
        }
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--processes", type=int, default=60, help="processes per setting")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    res = measure(args.processes)
    for setting in ("random", "fixed"):
        r = res[setting]
        assert isinstance(r, dict)
        print(f"{setting:7s} median {r['median_ns']} ns  between processes: cv {r['cv']}, "
              f"p10-p90 {r['p10_p90']} of the median, min {r['min_ns']}, max {r['max_ns']}")  # fmt: skip
    print(f"layout here: {res['layout_here']}")
    if args.out:
        args.out.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
