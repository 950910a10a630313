"""Image tasks: sources seeded from a container image, commands run inside it.

A task whose spec carries ``image: {ref, digest?, path}`` optimizes code that ships in a
serving image (vLLM, SGLang). When it is staged (:class:`ImageKind`, at run start and by
validation and the API) :func:`seed_from_image` copies ``path`` out of the image with the Docker SDK (a created, never started, container), and the run
stores it with the task folder (workloads such as shape lists or traces, never
editable) as one tree; the image's id is recorded in ``.aka-source.json``, so a tag
that moves later does not change the run.

At evaluation :func:`run_in_image` starts one container of that image id with the fresh
evaluation directory bind-mounted at the same path, no network, and the GPU passed
through (``device_requests``) when the device is cuda; the task's commands then run
through :func:`aka.kinds._command.run_commands`, each wrapped so that it executes in the
container (``python -m aka.kinds._image_exec exec <container> <command>``) in the directory
it was given. So interleaving, report reading and the "command's own numbers" marking
are exactly those of every command task.

``AKA_IMAGE_MOUNTS`` (``host[:container],...``) adds read-only bind mounts to that
container, to lend a host toolchain to a minimal image (the tests use it for Python).
"""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aka.errors import AkaError, InputError
from aka.eval import EvalRequest
from aka.kind_specs import SOURCE_LOCK, CommandSpec, ImageSpec
from aka.kinds._command import CommandKind, run_commands
from aka.kinds._repository import finish_staging
from aka.tasks import TASK_FILE, Task

__all__ = ["ImageKind", "docker_from_env", "run_in_image", "seed_from_image"]

MOUNTS_ENV = "AKA_IMAGE_MOUNTS"
KEEPALIVE = ["sh", "-c", "while :; do sleep 3600; done"]


def docker_from_env() -> Any:
    """A client of the Docker daemon named by DOCKER_HOST (or the default socket).

    Raises:
        AkaError: no daemon answers; the message says how to start one.
    """
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        raise AkaError(
            f"no Docker daemon answers ({exc})",
            where=os.environ.get("DOCKER_HOST", "default socket"),
            fix='start one (eval "$(bash .ci/services/docker.sh)") or set DOCKER_HOST',
        ) from None
    return client


def _image(client: Any, spec: ImageSpec, where: str) -> Any:
    import docker

    try:
        image = client.images.get(spec.ref)
    except docker.errors.ImageNotFound:
        try:
            image = client.images.pull(spec.ref)
        except docker.errors.APIError as exc:
            raise InputError(
                f"field 'image.ref': image {spec.ref!r} is not local and cannot be pulled: {exc}",
                where=where,
                fix="build or load the image first (docker load / docker build)",
            ) from None
    known = [image.id, *image.attrs.get("RepoDigests", [])]
    if spec.digest and not any(k == spec.digest or k.endswith("@" + spec.digest) for k in known):
        raise InputError(
            f"field 'image.digest': {spec.ref!r} is {image.id}, not {spec.digest}",
            where=where,
            fix="update the digest, or load the image it names",
        )
    return image


def seed_from_image(spec: ImageSpec, dest: Path, *, where: str) -> dict[str, Any]:
    """Copy ``spec.path`` out of the image into ``dest``; returns the lock record.

    Raises:
        InputError: the image is missing, its digest differs, or the path is absent.
    """
    import docker

    client = docker_from_env()
    image = _image(client, spec, where)
    container = client.containers.create(image.id, command=["true"], network_mode="none")
    try:
        chunks, _ = container.get_archive(spec.path)
        data = b"".join(chunks)
    except docker.errors.NotFound:
        raise InputError(
            f"field 'image.path': {spec.path!r} does not exist in {spec.ref}",
            where=where,
            fix="name a directory that exists in the image",
        ) from None
    finally:
        container.remove(force=True)
    with tempfile.TemporaryDirectory(prefix="aka-seed-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp, filter="data")
        top = Path(tmp) / Path(spec.path.rstrip("/")).name
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copytree(top, dest, symlinks=True, dirs_exist_ok=True)
    return {"kind": "image", "ref": spec.ref, "image_id": image.id, "path": spec.path}


def _extra_mounts() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for item in filter(None, os.environ.get(MOUNTS_ENV, "").split(",")):
        host, _, inside = item.partition(":")
        out[host] = {"bind": inside or host, "mode": "ro"}
    return out


@contextmanager
def _container(image_id: str, root: Path, device: str) -> Iterator[Any]:
    """A running container of ``image_id`` with ``root`` mounted at the same path."""
    import docker

    client = docker_from_env()
    requests = []
    if device.startswith("cuda"):
        # Either the one GPU the device names or all of them (docker takes one of the two).
        requests = [
            docker.types.DeviceRequest(device_ids=[device.split(":", 1)[1]], capabilities=[["gpu"]])
            if ":" in device
            else docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])
        ]
    container = client.containers.run(
        image_id,
        KEEPALIVE,
        detach=True,
        network_mode="none",
        user=f"{os.getuid()}:{os.getgid()}",
        environment={"HOME": "/tmp"},
        volumes={str(root): {"bind": str(root), "mode": "rw"}, **_extra_mounts()},
        device_requests=requests,
    )
    try:
        yield container
    finally:
        container.remove(force=True)


def _wrapped(spec: CommandSpec, container_id: str) -> CommandSpec:
    """The spec with each command sent into the container, in the caller's directory."""

    def wrap(cmd: str) -> str:
        return shlex.join(
            [sys.executable, "-m", "aka.kinds._image_exec", "exec", container_id, cmd]
        )

    return spec.model_copy(
        update={
            "compile": wrap(spec.compile),
            "correctness": wrap(spec.correctness),
            "performance": wrap(spec.performance),
        }
    )


def run_in_image(
    image_id: str,
    spec: CommandSpec,
    *,
    root: Path,
    base: Path,
    cand: Path,
    device: str,
    time: bool,
) -> dict[str, Any]:
    """Compile, check and time a candidate with the task's commands inside ``image_id``."""
    try:
        with _container(image_id, root, device) as container:
            result = run_commands(
                _wrapped(spec, container.id), base=base, cand=cand, device=device, time=time
            )
    except AkaError as exc:
        result = {
            "compiled": None,
            "cases": [],
            "timing": [],
            "device": {"device": device},
            "error": str(exc),
            "correct": False,
        }
    result["device"] = {**result["device"], "judge": "task commands in image", "image": image_id}
    return result


class ImageKind(CommandKind):
    """A command task seeded from, and judged inside, a container image (``image:`` block)."""

    name = "image"

    def stage(self, task: Task, dest: Path) -> None:
        """Copy the image's ``path`` under ``source_dir``, then the task's own files."""
        assert task.spec.image is not None  # ImageSpec is this kind's field
        where = str(task.path / TASK_FILE)
        lock = seed_from_image(task.spec.image, dest / task.spec.source_dir, where=where)
        finish_staging(task, dest, lock)

    def run(self, req: EvalRequest, dest: Path) -> tuple[dict[str, Any], str]:
        """The commands run in a container of the staged image id, without a network."""
        spec = req.task.spec.commands
        assert spec is not None  # TaskSpec requires commands with an image
        lock = json.loads((dest / "task" / SOURCE_LOCK).read_text())
        result = run_in_image(
            lock["image_id"], spec, root=dest, base=dest / "base", cand=dest / "cand",
            device=req.device, time=req.time,
        )  # fmt: skip
        return result, "none (container)"
