"""Slurm runner: workers as a job array, submitted, watched and resumed from a login node.

Each array task is one ``aka worker`` with one GPU (Slurm sets its
``CUDA_VISIBLE_DEVICES``), so the array size is nodes x GPUs per node and Slurm packs
the tasks onto nodes. Array tasks are independent: a preempted, timed-out or cancelled
task leaves a lease that expires, and its attempt is retried by a task still running or
by the next submission. Resuming is submitting again: workers claim only what the ledger
still lists as pending.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from aka.errors import AkaError, InputError
from aka.runkeys import KEY_DIR_ENV, key_dir
from aka_runners._local import worker_args

__all__ = ["SlurmSpec", "batch_script", "slurm_states", "submit_slurm", "watch_slurm"]


def _default_aka() -> str:
    beside = Path(sys.executable).parent / "aka"
    return str(beside) if beside.exists() else "aka"


@dataclass(frozen=True)
class SlurmSpec:
    """Where and how the worker array runs.

    Attributes:
        partition: ``--partition`` (None: the cluster's default).
        account: ``--account`` (None: the user's default).
        gpus_per_node: GPUs used per node; 0 runs CPU workers.
        nodes: with ``gpus_per_node``, the array size is ``nodes * gpus_per_node``.
        cpu_workers: the array size when ``gpus_per_node`` is 0.
        time_limit: ``--time`` per worker (``HH:MM:SS`` or ``D-HH:MM:SS``).
        cpus_per_worker: ``--cpus-per-task`` (the evaluator compiles; give it cores).
        mem: ``--mem`` per worker, e.g. ``"32G"`` (None: the partition's default).
        setup: shell lines run before the worker (``module load ...``, activate a venv).
        extra: further ``#SBATCH`` options, e.g. ``["--qos=high"]``.
        aka: the ``aka`` executable on the compute nodes (default: this one).
    """

    partition: str | None = None
    account: str | None = None
    gpus_per_node: int = 0
    nodes: int = 1
    cpu_workers: int = 1
    time_limit: str = "04:00:00"
    cpus_per_worker: int = 4
    mem: str | None = None
    setup: str = ""
    extra: Sequence[str] = ()
    aka: str = field(default_factory=_default_aka)

    @property
    def workers(self) -> int:
        """Array size: one worker per GPU, or ``cpu_workers``."""
        return self.nodes * self.gpus_per_node if self.gpus_per_node else self.cpu_workers


def batch_script(
    run_id: str,
    ledger: Path,
    spec: SlurmSpec,
    *,
    lease_ttl_s: float = 60.0,
    source: str | None = None,
    log_dir: Path | None = None,
) -> str:
    """The sbatch script: a job array whose every task runs ``aka worker``."""
    if spec.workers < 1:
        raise InputError(
            f"no workers to submit ({spec.workers})",
            where="slurm",
            fix="set gpus_per_node and nodes, or cpu_workers",
        )
    ledger = Path(ledger).resolve()
    logs = log_dir or ledger / "sidecar" / "slurm" / run_id
    opts = [
        f"--job-name=aka-{run_id}"[:64],
        f"--array=0-{spec.workers - 1}",
        "--ntasks=1",
        f"--cpus-per-task={spec.cpus_per_worker}",
        f"--time={spec.time_limit}",
        f"--output={logs}/%A_%a.out",
    ]
    opts += [f"--partition={spec.partition}"] if spec.partition else []
    opts += [f"--account={spec.account}"] if spec.account else []
    opts += ["--gpus=1"] if spec.gpus_per_node else []
    opts += [f"--mem={spec.mem}"] if spec.mem else []
    opts += list(spec.extra)
    args = worker_args(
        run_id,
        ledger,
        device="cuda" if spec.gpus_per_node else None,
        lease_ttl_s=lease_ttl_s,
        source=source,
    )
    wid = "slurm-${SLURM_ARRAY_JOB_ID}-${SLURM_ARRAY_TASK_ID}"
    lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in opts), "set -euo pipefail"]
    # The run key directory the submitter uses (a shared home on a cluster), so the
    # workers can MAC the outcomes they record (docs/security.md).
    lines += [f"export {KEY_DIR_ENV}={shlex.quote(str(key_dir()))}"]
    lines += [spec.setup] if spec.setup else []
    cmd = " ".join([shlex.quote(spec.aka), *map(shlex.quote, args)])
    lines += [f'exec {cmd} --worker-id "{wid}"', ""]
    return "\n".join(lines)


def _run(argv: list[str], env: Mapping[str, str] | None) -> str:
    if shutil.which(argv[0]) is None:
        raise AkaError(
            f"`{argv[0]}` is not on PATH",
            where="slurm runner",
            fix="run from a Slurm login node (or `module load slurm`)",
        )
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AkaError(
            f"`{' '.join(argv[:2])}` failed: {done.stderr.strip()[:500]}",
            where="slurm runner",
            fix="check partition, account and time limit against `sinfo` and `sacctmgr show assoc`",
        )
    return done.stdout


def submit_slurm(
    run_id: str,
    ledger: Path,
    spec: SlurmSpec,
    *,
    lease_ttl_s: float = 60.0,
    source: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Write the batch script under ``<ledger>/slurm/<run_id>/`` and sbatch it; the job id.

    Submitting again for the same run is how a run is resumed (after a time limit, a
    preemption or a scancel): the new workers claim only what is still pending.
    """
    logs = Path(ledger).resolve() / "sidecar" / "slurm" / run_id
    logs.mkdir(parents=True, exist_ok=True)
    script = batch_script(run_id, ledger, spec, lease_ttl_s=lease_ttl_s, source=source)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    path = logs / f"submit-{stamp}.sbatch"
    path.write_text(script)
    return _run(["sbatch", "--parsable", str(path)], env).strip().split(";")[0]


def slurm_states(job_id: str, *, env: Mapping[str, str] | None = None) -> Counter[str]:
    """State -> count of the job's array tasks still known to squeue (empty when all ended)."""
    out = _run(["squeue", "-h", "-j", job_id, "-r", "-o", "%T"], env)
    return Counter(line.strip() for line in out.splitlines() if line.strip())


def watch_slurm(
    job_id: str,
    *,
    poll_s: float = 10.0,
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
    progress: Callable[[Counter[str]], None] | None = None,
) -> None:
    """Poll squeue until no task of the job is queued or running (or ``timeout_s`` passes).

    Args:
        progress: called with the state counts at every poll (e.g. to print a line with
            the ledger's pending count next to them).

    Raises:
        AkaError: the timeout passed with tasks still queued or running.
    """
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        states = slurm_states(job_id, env=env)
        if progress is not None:
            progress(states)
        if not states:
            return
        if deadline is not None and time.monotonic() > deadline:
            raise AkaError(
                f"job {job_id} still has {dict(states)} after {timeout_s:g} s",
                where="slurm runner",
                fix=f"keep watching later, or `scancel {job_id}` and submit again to resume",
            )
        time.sleep(poll_s)
