"""What drawing a task's inputs in another process would cost, per timed call.

The sealed core draws every timed call's inputs with the reference's ``make_inputs`` in
the candidate's own process (docs/security.md, the open holes): code the candidate left
there can run while the inputs are drawn and compute the answer before the timed call.
Drawing them in a process that never runs candidate code closes that class, at the price
of moving each draw between processes. This measures that price against the draw as it
is, for the bundled tasks' shapes on one device, one draw after another:

- ``here``: ``make_inputs`` in this process, then a copy into buffers kept for the call
  (what the core does now);
- ``pipe``: a drawer process (spawned, never importing anything but the task's reference)
  draws, copies each tensor to the host and sends its bytes over a pipe; this process
  reads them into pinned host memory and copies them into its buffers;
- ``ipc`` (CUDA only): the drawer copies each draw into device buffers it shared once
  through CUDA IPC; this process copies them device to device into its buffers.

Each mode's figure is the median over ``--draws`` draws of the wall time from asking to
the buffers being ready (the device synchronized). Usage::

    python3 tools/bench_drawer.py --device cuda --out drawer.json
    python3 tools/bench_drawer.py --device cpu --tasks triton2triton/llm/softmax --draws 20
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1] / "tasks"


def _load(task: Path) -> Any:
    from aka.eval import load_file_module

    spec = yaml.safe_load((task / "task.yaml").read_text())
    return load_file_module(task / spec.get("reference", "reference.py"), "bench_drawer_ref")


def _tensors(args: Any) -> list[Any]:
    import torch

    return [a for a in args if isinstance(a, torch.Tensor)]


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _drawer(conn: Any, task: str, shape: dict[str, int], dtype: str, device: str,
            mode: str) -> None:  # fmt: skip
    """The drawer process: one draw per request (a seed), answered as ``mode`` says."""
    import torch

    ref = _load(Path(task))
    dt = getattr(torch, dtype)
    shared: list[torch.Tensor] = []
    while True:
        seed = conn.recv()
        if seed is None:
            return
        got = _tensors(ref.make_inputs(dict(shape), dt, device, seed))
        if mode == "pipe":
            host = [t.contiguous().cpu() for t in got]
            conn.send([(str(h.dtype), tuple(h.shape)) for h in host])
            for h in host:
                conn.send_bytes(h.view(torch.uint8).reshape(-1).numpy())
            continue
        if not shared:  # the first draw: buffers shared once (torch sends IPC handles)
            shared = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in got]
            conn.send(shared)
        for buf, t in zip(shared, got, strict=True):
            buf.copy_(t)
        torch.cuda.synchronize()
        conn.send(True)


def _here(ref: Any, shape: dict[str, int], dtype: str, device: str, draws: int) -> list[float]:
    import torch

    dt = getattr(torch, dtype)
    out, bufs = [], None
    for i in range(draws + 1):
        _sync(device)
        t0 = time.perf_counter()
        got = _tensors(ref.make_inputs(dict(shape), dt, device, 1000 + i))
        if bufs is None:
            bufs = [t.clone() for t in got]
        else:
            for b, t in zip(bufs, got, strict=True):
                b.copy_(t)
        _sync(device)
        if i:  # the first draw allocates: not counted
            out.append(time.perf_counter() - t0)
    return out


def _apart(task: Path, shape: dict[str, int], dtype: str, device: str, draws: int,
           mode: str) -> list[float]:  # fmt: skip
    import torch

    ctx = mp.get_context("spawn")
    mine, theirs = ctx.Pipe()
    proc = ctx.Process(target=_drawer, args=(theirs, str(task), shape, dtype, device, mode))
    proc.start()
    out: list[float] = []
    bufs: list[torch.Tensor] = []
    shared: list[torch.Tensor] = []
    pinned: list[torch.Tensor] = []
    try:
        for i in range(draws + 1):
            _sync(device)
            t0 = time.perf_counter()
            mine.send(1000 + i)
            if mode == "pipe":
                specs = mine.recv()
                if not pinned:
                    pin = device.startswith("cuda")
                    pinned = [torch.empty(s, dtype=getattr(torch, d.split(".")[-1]),
                                          pin_memory=pin) for d, s in specs]  # fmt: skip
                    bufs = [torch.empty_like(p, device=device) for p in pinned]
                for p in pinned:
                    mine.recv_bytes_into(p.view(torch.uint8).reshape(-1).numpy())
                for b, p in zip(bufs, pinned, strict=True):
                    b.copy_(p, non_blocking=True)
            else:
                if not shared:
                    shared = mine.recv()
                    bufs = [torch.empty_like(s) for s in shared]
                mine.recv()
                for b, s in zip(bufs, shared, strict=True):
                    b.copy_(s)
            _sync(device)
            if i:
                out.append(time.perf_counter() - t0)
    finally:
        mine.send(None)
        proc.join(30)
        if proc.is_alive():
            proc.kill()
    return out


def bench(tasks: list[Path], device: str, draws: int) -> list[dict[str, Any]]:
    import torch

    rows = []
    for task in tasks:
        spec = yaml.safe_load((task / "task.yaml").read_text())
        ref = _load(task)
        shapes = spec["shapes"]["cpu" if device == "cpu" else "tuning"]
        dtype = spec["dtypes"][0]
        for shape in shapes:
            got = _tensors(ref.make_inputs(dict(shape), getattr(torch, dtype), device, 1))
            row: dict[str, Any] = {
                "task": str(task.relative_to(ROOT)), "shape": shape, "dtype": dtype,
                "bytes": sum(t.numel() * t.element_size() for t in got),
            }  # fmt: skip
            modes = {"here": _here(ref, shape, dtype, device, draws)}
            modes["pipe"] = _apart(task, shape, dtype, device, draws, "pipe")
            if device.startswith("cuda"):
                modes["ipc"] = _apart(task, shape, dtype, device, draws, "ipc")
            for name, times in modes.items():
                row[f"{name}_ms"] = round(statistics.median(times) * 1e3, 4)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--tasks", nargs="*", default=["triton2triton/llm/softmax",
                   "triton2triton/llm/rms_norm", "triton2triton/llm/matmul",
                   "e2e/llama/prefill_rmsnorm"])  # fmt: skip
    p.add_argument("--draws", type=int, default=50)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    rows = bench([ROOT / t for t in args.tasks], args.device, args.draws)
    if args.out:
        args.out.write_text(json.dumps({"device": args.device, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
