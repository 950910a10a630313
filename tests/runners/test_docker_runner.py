"""Docker runner against a real dockerd: containers claim from one mounted ledger."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import runners_standin as standin

from aka.errors import AkaError
from aka_runners import DockerSpec, docker_client, run_docker, start_docker

SOURCE = "runners_standin:make"


def test_no_daemon_names_docker_host_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"unix://{tmp_path}/nothing.sock"
    monkeypatch.setenv("DOCKER_HOST", url)
    with pytest.raises(AkaError) as info:
        docker_client()
    text = info.value.render()
    assert url in text and "DOCKER_HOST" in text and "fix:" in text


def test_gpu_containers_request_one_gpu_each(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []

    class Containers:
        def run(self, image: str, argv: list[str], **kw: Any) -> str:
            calls.append({"image": image, "argv": argv, **kw})
            return "c"

    class Client:
        containers = Containers()

    start_docker("r", tmp_path, DockerSpec(image="img", gpus=[2, 5]), client=Client())
    assert [c["device_requests"][0]["DeviceIDs"] for c in calls] == [["2"], ["5"]]
    assert all(c["device_requests"][0]["Capabilities"] == [["gpu"]] for c in calls)
    assert all(c["volumes"][str(tmp_path.resolve())]["mode"] == "rw" for c in calls)
    assert [c["labels"]["aka.worker"] for c in calls] == ["docker-gpu2", "docker-gpu5"]
    assert all(c["argv"][c["argv"].index("--device") + 1] == "cuda" for c in calls)


def _spec(host_image: dict[str, Any], standin_path: str, workers: int) -> DockerSpec:
    return DockerSpec(
        image=host_image["image"],
        workers=workers,
        python=host_image["python"],
        mounts=host_image["mounts"],
        env={"PYTHONPATH": standin_path},
        network_mode="none",
    )


def _scored(ledger: Path) -> Counter[str]:
    return Counter(e[1] for e in standin.read_events(ledger) if e[0] == "scored")


@pytest.mark.docker
def test_containers_share_one_ledger(
    docker_client: Any, host_image: dict[str, Any], standin_path: str, tmp_path: Path
) -> None:
    standin.setup(tmp_path, {f"t{i}": 0.05 for i in range(8)})
    spec = _spec(host_image, standin_path, workers=2)
    summaries = run_docker("r", tmp_path, spec, lease_ttl_s=2, source=SOURCE, client=docker_client)
    assert all(s is not None for s in summaries), summaries
    assert _scored(tmp_path) == Counter({f"t{i}": 1 for i in range(8)})
    assert {e[2] for e in standin.read_events(tmp_path)} <= {"docker-cpu0", "docker-cpu1"}


def test_image_recipe_copies_every_package() -> None:
    """Every package folder of pyproject's mapping is copied into the image and let
    through the build-context filter, so the image never lacks a package."""
    import tomllib

    repo = Path(__file__).resolve().parents[2]
    recipe = (repo / "runners" / "Dockerfile").read_text()
    allowed = (repo / "runners" / "Dockerfile.dockerignore").read_text().splitlines()
    dirs = set(
        tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"][
            "package-dir"
        ].values()
    )
    copied = {line.split()[1] for line in recipe.splitlines() if line.startswith("COPY ")}
    assert dirs <= copied
    assert {f"!{d}/" for d in dirs} <= set(allowed)
    for name in copied | {"pyproject.toml"}:
        assert (repo / name).exists(), name
