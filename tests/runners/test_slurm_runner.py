"""Slurm runner: the batch script, and a real one-node cluster (submit, watch, scancel, resume)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
import runners_standin as standin

from aka.errors import InputError
from aka_runners import SlurmSpec, batch_script, submit_slurm, watch_slurm

SOURCE = "runners_standin:make"


def test_batch_script_carries_the_spec(tmp_path: Path) -> None:
    spec = SlurmSpec(
        partition="gpu",
        account="proj",
        gpus_per_node=4,
        nodes=2,
        time_limit="02:00:00",
        setup="module load cuda",
        aka="/opt/venv/bin/aka",
    )
    script = batch_script("run-1", tmp_path, spec, lease_ttl_s=90)
    for line in [
        "#SBATCH --array=0-7",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=proj",
        "#SBATCH --time=02:00:00",
        "#SBATCH --gpus=1",
        "module load cuda",
        f"export AKA_KEY_DIR={os.environ['AKA_KEY_DIR']}",
    ]:
        assert line in script.splitlines()
    last = script.strip().splitlines()[-1]
    assert last.startswith("exec /opt/venv/bin/aka worker --run run-1 --ledger ")
    assert "--device cuda" in last and "--lease-ttl 90" in last
    assert '--worker-id "slurm-${SLURM_ARRAY_JOB_ID}-${SLURM_ARRAY_TASK_ID}"' in last


def test_cpu_script_requests_no_gpu(tmp_path: Path) -> None:
    script = batch_script("r", tmp_path, SlurmSpec(cpu_workers=3))
    assert "#SBATCH --array=0-2" in script and "--gpus" not in script and "--device" not in script
    with pytest.raises(InputError, match="no workers"):
        batch_script("r", tmp_path, SlurmSpec(cpu_workers=0))


def _scored(ledger: Path) -> Counter[str]:
    return Counter(e[1] for e in standin.read_events(ledger) if e[0] == "scored")


@pytest.mark.slurm
def test_array_workers_share_one_ledger(
    slurm_env: dict[str, str], standin_path: str, tmp_path: Path
) -> None:
    standin.setup(tmp_path, {f"t{i}": 0.05 for i in range(6)})
    env = {**slurm_env, "PYTHONPATH": standin_path}
    job = submit_slurm(
        "r",
        tmp_path,
        SlurmSpec(cpu_workers=2, cpus_per_worker=1),
        lease_ttl_s=2,
        source=SOURCE,
        env=env,
    )
    seen: list[Counter[str]] = []
    watch_slurm(job, poll_s=0.5, timeout_s=120, env=env, progress=seen.append)
    assert seen and not seen[-1]
    assert _scored(tmp_path) == Counter({f"t{i}": 1 for i in range(6)})
    outs = sorted((tmp_path / "sidecar" / "slurm" / "r").glob(f"{job}_*.out"))
    assert len(outs) == 2
