"""Docker runner: one ``aka worker`` container per GPU, all writing to one mounted ledger.

Each container gets exactly one GPU through a device request (inside, it is ``cuda:0``)
and the ledger directory bind-mounted read-write at the same path, so lease files and
events land where every other worker sees them. Containers are labelled with the run id,
so a later command can find (and a user can ``docker ps --filter``) a run's workers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aka.errors import AkaError
from aka.runkeys import KEY_DIR_ENV, key_dir
from aka_runners._local import worker_argv

__all__ = ["DockerSpec", "docker_client", "run_docker", "start_docker", "wait_docker"]

RUN_LABEL = "aka.run"
WORKER_LABEL = "aka.worker"


@dataclass(frozen=True)
class DockerSpec:
    """How to start worker containers.

    Attributes:
        image: an image with aka installed (``runners/Dockerfile`` builds one).
        gpus: host GPU indices, one container each; empty for CPU containers.
        workers: CPU container count when ``gpus`` is empty.
        python: the interpreter inside the image that can import aka.
        mounts: extra binds, host path -> container path, read-only unless the container
            path ends in ``:rw`` (caches, task folders, a scratch directory).
        env: extra environment for every container.
        network_mode: ``"host"`` by default: workers need no ports, agents may need the net.
        user: ``"uid:gid"`` the workers run as (default: the caller's, so ledger files
            keep the caller's ownership on a shared file system).
    """

    image: str
    gpus: Sequence[int] = ()
    workers: int = 1
    python: str = "python"
    mounts: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    network_mode: str = "host"
    user: str | None = None


def docker_client(base_url: str | None = None) -> Any:
    """A docker SDK client that answers, or an :class:`AkaError` naming the socket and the fix."""
    import docker
    from docker.errors import DockerException

    where = base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock (default)"
    try:
        client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
        client.ping()
    except DockerException as exc:
        raise AkaError(
            f"no Docker daemon answers at DOCKER_HOST={where} ({type(exc).__name__})",
            where="docker runner",
            fix="start dockerd (`sudo systemctl start docker`, or `.ci/services/docker.sh` "
            "for a private one) and point DOCKER_HOST at its socket",
        ) from exc
    return client


def start_docker(
    run_id: str,
    ledger: Path,
    spec: DockerSpec,
    *,
    lease_ttl_s: float = 60.0,
    source: str | None = None,
    client: Any = None,
) -> list[Any]:
    """Start the run's worker containers (detached); returns docker SDK containers."""
    from docker.types import DeviceRequest

    client = client or docker_client()
    ledger = Path(ledger).resolve()
    keys = key_dir().resolve()  # the run key, so workers can sign what they record
    volumes = {str(ledger): {"bind": str(ledger), "mode": "rw"}}
    if keys.is_dir():
        volumes[str(keys)] = {"bind": str(keys), "mode": "ro"}
    for host, target in spec.mounts.items():
        path, _, mode = target.partition(":")
        volumes[host] = {"bind": path, "mode": mode or "ro"}
    user = spec.user or f"{os.getuid()}:{os.getgid()}"
    slots: list[tuple[str, list[Any], str | None]]
    if spec.gpus:
        slots = [
            (f"docker-gpu{g}", [DeviceRequest(device_ids=[str(g)], capabilities=[["gpu"]])], "cuda")
            for g in spec.gpus
        ]
    else:
        slots = [(f"docker-cpu{i}", [], None) for i in range(spec.workers)]
    containers = []
    for wid, requests, device in slots:
        argv = worker_argv(
            run_id,
            ledger,
            python=spec.python,
            device=device,
            lease_ttl_s=lease_ttl_s,
            worker_id=wid,
            source=source,
        )
        containers.append(
            client.containers.run(
                spec.image,
                argv,
                detach=True,
                device_requests=requests or None,
                volumes=volumes,
                environment={**spec.env, KEY_DIR_ENV: str(keys)},
                network_mode=spec.network_mode,
                user=user,
                working_dir=str(ledger),
                labels={RUN_LABEL: run_id, WORKER_LABEL: wid},
            )
        )
    return containers


def wait_docker(
    containers: Sequence[Any], *, remove: bool = True
) -> list[dict[str, object] | None]:
    """Wait for every container; each one's JSON summary, or None if it failed or was killed."""
    out: list[dict[str, object] | None] = []
    for c in containers:
        status = c.wait()
        summary = None
        if status.get("StatusCode") == 0:
            for line in reversed(c.logs(stdout=True, stderr=False).decode().splitlines()):
                if line.startswith("{"):
                    summary = json.loads(line)
                    break
        if remove:
            c.remove(force=True)
        out.append(summary)
    return out


def run_docker(
    run_id: str,
    ledger: Path,
    spec: DockerSpec,
    *,
    lease_ttl_s: float = 60.0,
    source: str | None = None,
    client: Any = None,
) -> list[dict[str, object] | None]:
    """Start one container per GPU (or ``spec.workers`` CPU containers) and wait for all."""
    containers = start_docker(
        run_id, ledger, spec, lease_ttl_s=lease_ttl_s, source=source, client=client
    )
    return wait_docker(containers)
