"""What a fresh evaluation process pays before its first kernel, on this machine's GPU.

Forks children from a parent that imported torch and triton (as the warm zygote does)
and times, in each child: network isolation (a user+network namespace), CUDA start-up
(the first tensor on the device), the first use of common ops (random inputs, a matmul,
``allclose`` in double, as a checker runs them), and the exit of a process holding a
CUDA context, seen from the parent. Also times a fresh interpreter importing torch and
triton. ``python3 tools/cuda_start.py --out cuda_start.json``; needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def child(w: int, isolate: bool) -> None:
    import torch

    t0 = time.perf_counter()
    if isolate:
        from aka.eval._sandbox import isolate_network

        isolate_network()
    t1 = time.perf_counter()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    x = torch.randn(1024, 1024, device="cuda", generator=torch.Generator(device="cuda"))
    y = x @ x
    ok = torch.allclose(y.double(), y.double()) and bool(torch.isfinite(y).all())
    (y.double() - y.double()).abs().max().item()
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    msg = {"isolate_s": t1 - t0, "cuda_init_s": t2 - t1, "first_ops_s": t3 - t2, "ok": ok}
    os.write(w, json.dumps(msg).encode())
    os.close(w)
    os._exit(0)


def forked(isolate: bool) -> dict[str, float]:
    r, w = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child(w, isolate)
    os.close(w)
    data = os.read(r, 4096)
    said = time.perf_counter()
    os.waitpid(pid, 0)
    out = json.loads(data)
    out["exit_s"] = time.perf_counter() - said
    out["fork_to_ready_s"] = said - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out")
    args = parser.parse_args()
    t0 = time.perf_counter()
    import torch  # noqa: F401
    import triton
    import triton.language  # noqa: F401

    report: dict[str, object] = {"import_s": time.perf_counter() - t0}
    fresh = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch, triton, triton.language"], check=True)
        fresh.append(time.perf_counter() - t)
    report["fresh_interpreter_import_s"] = fresh
    for isolate in (False, True):
        runs = [forked(isolate) for _ in range(args.repeat)]
        key = "isolated" if isolate else "plain"
        report[key] = {
            k: round(statistics.median(r[k] for r in runs), 4)
            for k in ("isolate_s", "cuda_init_s", "first_ops_s", "exit_s", "fork_to_ready_s")
        }
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
