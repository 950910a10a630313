"""One entry point for ``aka run`` / ``aka resume``: start a run's workers on a runner.

The CLI maps its flags (``--runner``, ``--gpus``, ``--workers``) and the config's runner
settings onto this call; starting workers for a run that is already partly done is how
it is resumed, on any runner, because workers claim only pending attempts.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aka.errors import InputError
from aka_runners._docker import DockerSpec, run_docker
from aka_runners._local import run_local
from aka_runners._slurm import SlurmSpec, submit_slurm, watch_slurm

__all__ = ["RUNNERS", "LaunchResult", "launch"]

RUNNERS = ("local", "docker", "slurm")


@dataclass
class LaunchResult:
    """What a launch did.

    Attributes:
        runner: ``local``, ``docker`` or ``slurm``.
        summaries: per worker, its JSON summary (None for a worker that died); empty for
            Slurm, whose workers report in their log files.
        job_id: the Slurm job id (None elsewhere).
    """

    runner: str
    summaries: list[dict[str, object] | None] = field(default_factory=list)
    job_id: str | None = None


def launch(
    run_id: str,
    ledger: Path,
    *,
    runner: str = "local",
    gpus: Sequence[int] | None = None,
    workers: int | None = None,
    lease_ttl_s: float = 60.0,
    docker: DockerSpec | None = None,
    slurm: SlurmSpec | None = None,
    watch: bool = True,
    progress: Callable[[Counter[str]], None] | None = None,
    source: str | None = None,
) -> LaunchResult:
    """Start the run's workers and (unless ``watch`` is False for Slurm) wait for them.

    Args:
        runner: where workers run.
        gpus: one worker per listed GPU (local and Docker; Slurm takes its GPUs from
            ``slurm.gpus_per_node`` and ``slurm.nodes``).
        workers: CPU worker count when ``gpus`` is empty.
        docker: the image and mounts (required for ``docker``).
        slurm: partition, account, GPUs per node, time limit (default: a CPU spec).
        watch: for Slurm, poll squeue until the array ends; False returns after sbatch.
        progress: for Slurm, called with the array's state counts at every poll.
        source: an attempt source ``module:factory`` (tests).
    """
    if runner == "local":
        summaries = run_local(
            run_id, ledger, gpus=gpus, workers=workers, lease_ttl_s=lease_ttl_s, source=source
        )
        return LaunchResult("local", summaries)
    if runner == "docker":
        if docker is None:
            raise InputError(
                "the docker runner needs an image", where="runner", fix="set the Docker image"
            )
        spec = dataclasses.replace(
            docker, gpus=list(gpus or docker.gpus), workers=workers or docker.workers
        )
        return LaunchResult(
            "docker", run_docker(run_id, ledger, spec, lease_ttl_s=lease_ttl_s, source=source)
        )
    if runner == "slurm":
        spec_s = slurm or SlurmSpec(cpu_workers=workers or 1)
        job = submit_slurm(run_id, ledger, spec_s, lease_ttl_s=lease_ttl_s, source=source)
        if watch:
            watch_slurm(job, progress=progress)
        return LaunchResult("slurm", job_id=job)
    raise InputError(
        f"unknown runner {runner!r}", where="runner", fix=f"use one of {', '.join(RUNNERS)}"
    )
