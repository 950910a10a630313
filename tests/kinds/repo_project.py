"""A tiny kernel project (a scale kernel, a torch checker, a benchmark) and task folders over it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import yaml

GOOD_KERNEL = "def scale(x):\n    return x * 2.0\n"
WRONG_KERNEL = "def scale(x):\n    return x * 3.0\n"
CHECK = """import json, sys
import torch
from kernels.scale import scale

shapes = json.load(open("workloads/shapes.json"))
for n in shapes:
    x = torch.linspace(-1.0, 1.0, n)
    if not torch.allclose(scale(x), x * 2.0):
        sys.exit(f"scale is wrong at n={n}")
"""
BENCH = """import json, os, time
from kernels.scale import scale

shapes = json.load(open("workloads/shapes.json"))
out = []
for i, n in enumerate(shapes):
    xs = [v / n for v in range(n)]
    t0 = time.perf_counter()
    for v in xs:
        scale(v)
    out.append({"test_case_id": f"n{n}", "execution_time_ms": (time.perf_counter() - t0) * 1e3,
                "params": {"n": n}})
os.makedirs("build", exist_ok=True)
json.dump(out, open("build/performance_report.json", "w"))
"""
FORGED_CHECK = "raise SystemExit(0)\n"
FORGED_BENCH = """import json, os
os.makedirs("build", exist_ok=True)
json.dump([{"test_case_id": "n2000", "execution_time_ms": 1e-9}], open("build/performance_report.json", "w"))
"""
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def project_files(kernel: str = GOOD_KERNEL, version: str = "v1") -> dict[str, str]:
    """The project's files (path -> text)."""
    return {
        "kernels/__init__.py": "",
        "kernels/scale.py": kernel,
        "check.py": CHECK,
        "bench.py": BENCH,
        "VERSION": version + "\n",
    }


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its stdout."""
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    """Write ``files``, commit them on the current branch; the new SHA."""
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_repo(path: Path) -> str:
    """A repository whose ``main`` holds the good kernel (v1); returns that commit."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return commit(path, project_files(), "v1")


def task_spec(source: dict[str, Any], *, python: str = "python") -> dict[str, Any]:
    """A task.yaml body: the project's commands, ``kernels/`` editable."""
    return {
        "name": "scale",
        "type": "repository",
        "instructions": "Make kernels/scale.py faster.",
        "backend": "torch",
        "reference": "check.py",
        "reference_visible": False,
        "source_dir": ".",
        "editable": ["kernels"],
        "entry": "kernels/scale.py:scale",
        "devices": ["cpu", "cuda"],
        "shapes": {"tuning": [{"case": 0}], "cpu": [{"case": 0}]},
        "commands": {
            "compile": f"{python} -c 'import kernels.scale'",
            "correctness": f"{python} check.py",
            "performance": f"{python} bench.py",
            "timeout_s": 120,
        },
        **source,
    }


def write_task(root: Path, key: str, spec: dict[str, Any]) -> Path:
    """A task folder: task.yaml plus the workload (never editable)."""
    folder = root / key
    (folder / "workloads").mkdir(parents=True)
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    (folder / "workloads" / "shapes.json").write_text(json.dumps([500, 2000]))
    return folder


def image_tar(kernel: str = GOOD_KERNEL) -> bytes:
    """A root file system (the host's /usr is mounted over it) with the project in /opt/project."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ["tmp", "usr", "etc", "proc", "sys", "dev", "opt", "opt/project"]:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755
            tar.addfile(info)
        for name, target in [("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        for rel, text in project_files(kernel).items():
            data = text.encode()
            info = tarfile.TarInfo(f"opt/project/{rel}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def docker_client() -> Any | None:
    """A client of a running dockerd (DOCKER_HOST, or the one of .ci/services/docker.sh)."""
    import docker

    for url in [os.environ.get("DOCKER_HOST"), "unix:///tmp/aka-docker/docker.sock"]:
        if not url:
            continue
        try:
            found = docker.DockerClient(base_url=url)
            found.ping()
            os.environ["DOCKER_HOST"] = url
            return found
        except Exception:
            continue
    return None
