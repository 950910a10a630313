"""aka_runners: where attempts execute (local, Docker, Slurm), claiming work from the ledger.

Workers share one ledger directory and claim attempts through lease files in it
(:func:`claim_next`), so no central server is needed; every runner launches the same
``aka worker`` loop (:func:`run_worker`).
"""

from aka.claims import Claim, LeaseInfo, claim_next, claims_dir, key_state, read_leases
from aka_runners._docker import DockerSpec, docker_client, run_docker, start_docker, wait_docker
from aka_runners._launch import RUNNERS, LaunchResult, launch
from aka_runners._local import (
    LocalWorker,
    parse_gpus,
    run_local,
    start_local,
    worker_args,
    worker_argv,
)
from aka_runners._order import longest_first, task_estimates
from aka_runners._preflight import DeviceInfo, detect_device, preflight
from aka_runners._scale import ScaleStep, WorkerRow, default_counts, run_scale
from aka_runners._schedule import measure_claim_latency, simulate, synthetic_attempts
from aka_runners._slurm import SlurmSpec, batch_script, slurm_states, submit_slurm, watch_slurm
from aka_runners._worker import (
    AttemptSource,
    SourceFactory,
    WorkerReport,
    default_worker_id,
    load_source_factory,
    orchestrator_source,
    run_worker,
)

__all__ = [
    "RUNNERS",
    "AttemptSource",
    "Claim",
    "DeviceInfo",
    "DockerSpec",
    "LaunchResult",
    "LeaseInfo",
    "LocalWorker",
    "ScaleStep",
    "SlurmSpec",
    "SourceFactory",
    "WorkerReport",
    "WorkerRow",
    "batch_script",
    "claim_next",
    "claims_dir",
    "default_counts",
    "default_worker_id",
    "detect_device",
    "docker_client",
    "key_state",
    "launch",
    "load_source_factory",
    "longest_first",
    "measure_claim_latency",
    "orchestrator_source",
    "parse_gpus",
    "preflight",
    "read_leases",
    "run_docker",
    "run_local",
    "run_scale",
    "run_worker",
    "simulate",
    "slurm_states",
    "start_docker",
    "start_local",
    "submit_slurm",
    "synthetic_attempts",
    "task_estimates",
    "wait_docker",
    "watch_slurm",
    "worker_args",
    "worker_argv",
]
