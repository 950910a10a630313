"""Fixtures for runner tests: the stand-in on PYTHONPATH, real dockerd and Slurm when present."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
HOST_IMAGE = "aka-ci-host:latest"


@pytest.fixture
def standin_path(monkeypatch: pytest.MonkeyPatch) -> str:
    """Puts ``runners_standin`` on PYTHONPATH for worker subprocesses; returns the folder."""
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", f"{HERE}{os.pathsep}{path}" if path else str(HERE))
    return str(HERE)


@pytest.fixture(scope="session")
def docker_client() -> Any:
    """A client of a running dockerd (DOCKER_HOST, or the private one of .ci/services/docker.sh)."""
    import docker

    for url in [os.environ.get("DOCKER_HOST"), "unix:///tmp/aka-docker/docker.sock", None]:
        try:
            client = docker.DockerClient(base_url=url) if url else docker.from_env()
            client.ping()
            return client
        except Exception:
            continue
    pytest.skip("no Docker daemon answers (start one with .ci/services/docker.sh)")


def _skeleton_tar() -> bytes:
    """A root file system of symlinks and empty dirs; the host's /usr is mounted over it."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ["tmp", "usr", "etc", "root", "proc", "sys", "dev", "work"]:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755
            tar.addfile(info)
        for name, target in [
            ("bin", "usr/bin"),
            ("lib", "usr/lib"),
            ("lib64", "usr/lib64"),
            ("sbin", "usr/sbin"),
        ]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


@pytest.fixture(scope="session")
def host_image(docker_client: Any) -> dict[str, Any]:
    """An image imported from a skeleton rootfs (no registry is reachable) plus the host
    mounts that give it this interpreter and this checkout: the container runs the same
    aka as the tests, at the same paths."""
    try:
        docker_client.images.get(HOST_IMAGE)
    except Exception:
        docker_client.api.import_image_from_data(
            _skeleton_tar(), repository="aka-ci-host", tag="latest"
        )
    mounts = {
        "/usr": "/usr",
        "/etc": "/etc",
        sys.base_prefix: sys.base_prefix,
        str(REPO): str(REPO),
    }
    if not Path(sys.prefix).resolve().is_relative_to(REPO):
        mounts[sys.prefix] = sys.prefix
    return {"image": HOST_IMAGE, "mounts": mounts, "python": sys.executable}


_SLURM_SKIP: list[str] = []  # the first probe's skip reason, so later tests skip at once


@pytest.fixture(scope="session")
def slurm_env() -> Iterator[dict[str, str]]:
    """Environment of a running Slurm (SLURM_CONF, or the one-node cluster of .ci/services/slurm.sh)."""
    if _SLURM_SKIP:
        pytest.skip(_SLURM_SKIP[0])
    env = dict(os.environ)
    if "SLURM_CONF" not in env and Path("/tmp/aka-slurm/slurm.conf").exists():
        env["SLURM_CONF"] = "/tmp/aka-slurm/slurm.conf"
    conf = env.get("SLURM_CONF", "/etc/slurm/slurm.conf")
    if shutil.which("sinfo") is None:
        _SLURM_SKIP.append("Slurm is not installed (run .ci/services/slurm.sh)")
    elif not Path(conf).is_file():  # sinfo would retry for a minute
        _SLURM_SKIP.append(f"no Slurm config at {conf} (run .ci/services/slurm.sh)")
    else:
        try:
            probe = subprocess.run(
                ["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True, timeout=10
            )
        except subprocess.TimeoutExpired:
            probe = subprocess.CompletedProcess([], 1, "", "sinfo did not answer in 10 s")
        if probe.returncode != 0 or not probe.stdout.strip():
            _SLURM_SKIP.append(
                f"no Slurm controller answers (run .ci/services/slurm.sh): {probe.stderr.strip()[:200]}"
            )
    if _SLURM_SKIP:
        pytest.skip(_SLURM_SKIP[0])
    yield env
