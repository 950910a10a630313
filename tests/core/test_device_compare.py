"""``aka compare`` refuses, from the fingerprints the evaluations recorded, arms timed apart.

On a machine with several GPUs each local worker is pinned to one card, and the card's
fingerprint (its UUID among it) is recorded with every timing; two sides timed on
different cards must not compare silently. A CPU stand-in for "another card": the
second run's processes are confined to one core, which the CPU fingerprint records
(``cpu_affinity``), so the two runs' recorded fingerprints differ as two GPUs' would.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from arena_helpers import write_config

from aka import events as ev
from aka.timing import device_kind
from aka_ledger import Ledger


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two CPUs to confine a run to one of them",
)
def test_runs_timed_on_different_devices_are_refused_then_warned_with_force(
    cli: Callable[..., Any], tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    cfg = write_config(tmp_path, tasks_root, arms=[{"name": "a", "agent": "noop"}])
    # Fresh interpreters per evaluation: a warm zygote started before the affinity changes
    # would hand its own to the checker (on a GPU host each worker starts its own zygote).
    led = ["--ledger", str(ledger_dir)]
    assert cli("run", str(cfg), *led, "--run-id", "r1", "--cold-workers").code == 0
    every = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(every)})
    try:
        assert cli("run", str(cfg), *led, "--run-id", "r2", "--cold-workers").code == 0
    finally:
        os.sched_setaffinity(0, every)
    sql = "SELECT run_id, count(DISTINCT device) AS n, any_value(device) AS d FROM scores GROUP BY run_id ORDER BY run_id"
    rows = json.loads(cli("sql", sql, *led, "--format", "json").out)
    assert [r["n"] for r in rows] == [1, 1] and rows[0]["d"] != rows[1]["d"]
    refused = cli("compare", "r1/a", "r2/a", *led)
    assert refused.code != 0 and "device fingerprints differ" in refused.err
    assert "--force" in refused.err
    forced = cli("compare", "r1/a", "r2/a", "--force", *led, "--format", "json")
    assert forced.code == 0, forced.err
    assert any("device fingerprints differ" in w for w in json.loads(forced.out)["warnings"])


H200 = {"device": "cuda:0", "name": "NVIDIA H200", "capability": "9.0", "sm_count": 132,
        "memory_bytes": 150_122_987_520, "uuid": "GPU-0f3c", "driver": "580.159.04",
        "cuda_runtime": "13.0", "torch": "2.11.0", "triton": "3.6.0"}  # fmt: skip


def test_identical_cards_are_one_kind_and_another_model_is_not() -> None:
    """Arms of a run on a host with several identical GPUs land on different cards: they
    must compare. What tells two cards apart (UUID, index) is not part of the kind."""
    other_card = {**H200, "device": "cuda:3", "uuid": "GPU-77aa"}
    assert device_kind(other_card) == device_kind(H200)
    assert "uuid" not in device_kind(H200) and "device" not in device_kind(H200)
    for key, value in (("name", "NVIDIA H100 80GB HBM3"), ("driver", "575.57.08"),
                       ("torch", "2.10.0"), ("sm_count", 114)):  # fmt: skip
        assert device_kind({**H200, key: value}) != device_kind(H200), key


def test_scores_carry_the_device_kind_and_measurements_each_card(
    cli: Callable[..., Any], tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    """``scores.device`` (what ``aka compare`` matches arms on) is the blob of the kind;
    ``measurements.device_digest`` keeps the card's whole fingerprint."""
    cfg = write_config(tmp_path, tasks_root, arms=[{"name": "a", "agent": "noop"}])
    led = ["--ledger", str(ledger_dir)]
    assert cli("run", str(cfg), *led, "--run-id", "r1").code == 0
    sql = ("SELECT DISTINCT s.device AS kind, m.device_digest AS card FROM scores s "
           "JOIN all_scores a USING (run_id, attempt_key) "
           "JOIN measurements m ON m.eval_id = a.eval_id WHERE s.correct")  # fmt: skip
    rows = json.loads(cli("sql", sql, *led, "--format", "json").out)
    assert len(rows) == 1

    with Ledger.open(ledger_dir, registry=ev.REGISTRY) as ledger:
        kind = json.loads(ledger.cas.get(rows[0]["kind"]))
        card = json.loads(ledger.cas.get(rows[0]["card"]))
    assert card["device"] == "cpu" and kind == device_kind(card) and "device" not in kind
