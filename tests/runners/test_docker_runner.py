"""Docker runner against a real dockerd: containers claim from one mounted ledger."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import runners_standin as standin

from aka.errors import AkaError
from aka_runners import DockerSpec, docker_client, read_leases, run_docker, start_docker

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


@pytest.mark.docker
def test_killed_container_attempt_is_retried_once(
    docker_client: Any, host_image: dict[str, Any], standin_path: str, tmp_path: Path
) -> None:
    standin.setup(tmp_path, {"slow": 30.0, "t0": 0.05, "t1": 0.05})
    spec = _spec(host_image, standin_path, workers=1)
    [victim] = start_docker("r", tmp_path, spec, lease_ttl_s=1, source=SOURCE, client=docker_client)
    try:
        deadline = time.time() + 60
        while not any(e[:2] == ("start", "slow") for e in standin.read_events(tmp_path)):
            assert time.time() < deadline, victim.logs().decode()
            time.sleep(0.05)
        victim.kill()
    finally:
        victim.remove(force=True)
    fast = {"slow": 0.05, "t0": 0.05, "t1": 0.05}  # the retry should not take 30 s again
    standin.setup(tmp_path, fast)
    summaries = run_docker(
        "r",
        tmp_path,
        _spec(host_image, standin_path, 2),
        lease_ttl_s=1,
        source=SOURCE,
        client=docker_client,
    )
    assert all(s is not None for s in summaries), summaries
    assert _scored(tmp_path) == Counter({"slow": 1, "t0": 1, "t1": 1})
    starts = [e for e in standin.read_events(tmp_path) if e[:2] == ("start", "slow")]
    assert [e[3] for e in starts] == [1, 2] and starts[0][2] == "docker-cpu0"
    assert len(read_leases(tmp_path, "r", "slow")) >= 2
