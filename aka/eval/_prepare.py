"""Prepared evaluation processes: start-up done before the evaluation that will use them.

A warm worker forks the candidate and checker processes of the *next* evaluation as soon
as the current evaluation has its candidate process (:mod:`aka.eval._spares`). Such a
process is started with ``--prepare DEVICE ISOLATE`` after its result-fd argument and,
while it waits for its request on stdin, does what every evaluation process does first
and what depends on no candidate: the candidate process enters its network namespace
(while it is still single-threaded), then both start CUDA and run a few common
operations once, so the lazily loaded kernels (random inputs, copies, comparisons in
double, fills) are in place; the timing gate (:mod:`aka.eval._gate`) stops it while a
candidate times. The request then names the working directory and the variables that
do depend on the evaluation (the candidate's kernel caches), applied by :func:`adopt`
before any task or candidate file is read. Nothing candidate-specific happens before
the request, so a prepared process is as fresh, for the candidate, as one forked on
demand. The request is one JSON line (:func:`read_request`); a candidate process later
reads the gate's answer from the same stdin (:func:`wait_for_gate`).
"""

from __future__ import annotations

import os
import select
from collections.abc import Callable
from typing import Any

from aka.eval._sandbox import isolate_network
from aka.eval._wire import Delivery

PREPARE = "--prepare"
PREPARED = b"aka: prepared\n"  # on stderr, once a prepared process has started its device
GATE_MARK = "gate"  # the mark a candidate process sends before timing (aka.eval._gate)
GATE_TIMEOUT_S = 600.0


def prepare_argv(device: str, isolate: bool) -> list[str]:
    """Arguments that make a process prepare itself for ``device``."""
    return [PREPARE, device, "1" if isolate else "0"]


def warm_device(device: str) -> None:
    """Start CUDA on ``device`` and run the operations every evaluation runs, once, small."""
    if not device.startswith("cuda"):
        return
    import torch

    gen = torch.Generator(device=device)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = torch.randn(64, 64, device=device, dtype=dtype, generator=gen)
        y = x.clone()
        torch.equal(x, y)
        torch.allclose(x.double(), y.double())
        torch.isfinite(x.double()).all()
        (x.double() - y.double()).abs().max().item()
        y.copy_(x)
        y.cpu()
    torch.rand(64, device=device, generator=gen)
    torch.randint(0, 8, (64,), device=device, generator=gen)
    torch.full((64,), 0x5A, dtype=torch.uint8, device=device)
    torch.cuda.synchronize(device)


def prepare(argv: list[str], *, isolate: bool) -> str | None:
    """In a prepared process: isolate (when asked and ``isolate``), start the device.

    Returns the network status for a prepared candidate process, or ``None`` when
    ``argv`` does not ask for preparation (the process then does all of it after its
    request arrives, as a process forked on demand).
    """
    if len(argv) < 3 or argv[0] != PREPARE:
        return None
    network = enter_network(argv[2] == "1") if isolate else "not isolated: checker process"
    warm_device(argv[1])
    os.write(2, PREPARED)  # the parent's cue that this spare waits ready (Proc.ready)
    return network


def enter_network(isolate: bool) -> str:
    """Isolate the network when asked (single-threaded only); say what happened."""
    return isolate_network() if isolate else "not isolated: disabled (AKA_EVAL_ISOLATE_NETWORK=0)"


def read_request() -> bytes:
    """The request: one line on stdin (:mod:`aka.eval._wire`), read a byte at a time.

    What follows the line belongs to others: a candidate process's key and plan are the
    sealed core's to read, then the gate's answer.
    """
    line = bytearray()
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1)
        if not chunk:
            break
        line += chunk
    return bytes(line)


def wait_for_gate(send: Callable[[dict[str, Any]], None]) -> None:
    """Ask the evaluator to stop what it prepared on this device; wait for its answer.

    ``send`` puts the mark on the signed result channel. The answer is one byte on
    stdin; none within :data:`GATE_TIMEOUT_S` (stdin closed, or read by someone else)
    is an error, so no sample is taken while others may be starting up.
    """
    send({"kind": "mark", "name": GATE_MARK})
    ready, _, _ = select.select([0], [], [], GATE_TIMEOUT_S)
    if not ready or os.read(0, 1) != b"g":
        raise RuntimeError("the evaluator did not open the timing gate (stdin closed or read)")


def adopt(delivery: Delivery) -> None:
    """Take the working directory and variables the delivery names (a prepared process)."""
    if delivery.cwd:
        os.chdir(delivery.cwd)
    os.environ.update(delivery.env)
