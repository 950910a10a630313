"""Local runner: N ``aka worker`` processes on this machine, one per GPU or N on CPU.

Each GPU worker sees exactly one GPU (``CUDA_VISIBLE_DEVICES=<index>``), so inside it
the device is always ``cuda:0`` and no attempt can touch another worker's GPU. Workers
are separate processes, not threads: a kernel that crashes or hangs its process takes
down one worker, whose lease then expires and whose attempt another worker retries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aka.errors import InputError

__all__ = [
    "LocalWorker",
    "parse_gpus",
    "run_local",
    "start_local",
    "worker_args",
    "worker_argv",
]


def parse_gpus(spec: str) -> list[int]:
    """``"0,1,3"`` -> ``[0, 1, 3]``; a clear error for anything else."""
    try:
        gpus = [int(part) for part in spec.split(",") if part.strip()]
    except ValueError:
        gpus = []
    if not gpus or any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise InputError(
            f"bad GPU list {spec!r}",
            where="--gpus",
            fix="give distinct indices, e.g. --gpus 0,1,2,3",
        )
    return gpus


def worker_args(
    run_id: str,
    ledger: Path,
    *,
    device: str | None = None,
    lease_ttl_s: float = 60.0,
    worker_id: str | None = None,
    source: str | None = None,
) -> list[str]:
    """The arguments of ``aka worker`` (after the program name), shared by every runner."""
    args = ["worker", "--run", run_id, "--ledger", str(ledger), "--lease-ttl", f"{lease_ttl_s:g}"]
    if device is not None:
        args += ["--device", device]
    if worker_id is not None:
        args += ["--worker-id", worker_id]
    if source is not None:
        args += ["--source", source]
    return args


def worker_argv(
    run_id: str,
    ledger: Path,
    *,
    python: str = sys.executable,
    device: str | None = None,
    lease_ttl_s: float = 60.0,
    worker_id: str | None = None,
    source: str | None = None,
) -> list[str]:
    """``python -c <aka main> worker ...``: needs only an interpreter that imports aka."""
    return [
        python,
        "-c",
        "from aka.cli import main; main()",
        *worker_args(
            run_id,
            ledger,
            device=device,
            lease_ttl_s=lease_ttl_s,
            worker_id=worker_id,
            source=source,
        ),
    ]


@dataclass
class LocalWorker:
    """One started worker process.

    Attributes:
        worker_id: its id (``local-gpu<N>`` or ``local-cpu<N>``), also in its leases.
        process: the running process; its stdout ends with a JSON summary line.
    """

    worker_id: str
    process: subprocess.Popen[str]

    def wait(self) -> dict[str, object] | None:
        """Wait for exit; the worker's JSON summary, or None if it died without one."""
        out, _ = self.process.communicate()
        if self.process.returncode != 0:
            return None
        for line in reversed((out or "").splitlines()):
            if line.startswith("{"):
                summary: dict[str, object] = json.loads(line)
                return summary
        return None


def start_local(
    run_id: str,
    ledger: Path,
    *,
    gpus: Sequence[int] | None = None,
    workers: int | None = None,
    lease_ttl_s: float = 60.0,
    source: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[LocalWorker]:
    """Start one worker per GPU in ``gpus``, or ``workers`` CPU workers (default 1)."""
    base = dict(os.environ if env is None else env)
    slots: list[tuple[str, dict[str, str], str | None]]
    if gpus:
        slots = [(f"local-gpu{g}", {"CUDA_VISIBLE_DEVICES": str(g)}, "cuda") for g in gpus]
    else:
        n = workers or 1
        if n < 1:
            raise InputError(f"bad worker count {n}", where="--workers", fix="use 1 or more")
        slots = [(f"local-cpu{i}", {"CUDA_VISIBLE_DEVICES": ""}, None) for i in range(n)]
    started = []
    for wid, extra, device in slots:
        argv = worker_argv(
            run_id, ledger, device=device, lease_ttl_s=lease_ttl_s, worker_id=wid, source=source
        )
        # Own process group: killing a worker's group also ends its agent and evaluator.
        proc = subprocess.Popen(
            argv,
            env={**base, **extra},
            stdout=subprocess.PIPE,
            stderr=None,
            text=True,
            start_new_session=True,
        )
        started.append(LocalWorker(wid, proc))
    return started


def run_local(
    run_id: str,
    ledger: Path,
    *,
    gpus: Sequence[int] | None = None,
    workers: int | None = None,
    lease_ttl_s: float = 60.0,
    source: str | None = None,
) -> list[dict[str, object] | None]:
    """Start local workers, wait for all of them, and return their summaries.

    A worker that died (killed, out of memory) returns None; its attempt was either
    finished by another worker after its lease expired or is left for ``aka resume``.
    """
    started = start_local(
        run_id, ledger, gpus=gpus, workers=workers, lease_ttl_s=lease_ttl_s, source=source
    )
    return [w.wait() for w in started]
