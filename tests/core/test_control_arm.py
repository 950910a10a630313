"""A control arm on a torch-to-kernel task: noop with ``control: true`` is judged as the baseline.

An imported torch2triton task's starting code calls the torch functions candidates may
not call, so a plain noop scores ``correct: false`` there and compare has no A/A row.
"""

from __future__ import annotations

from pathlib import Path

from arena_helpers import write_config

from aka import events as ev
from aka_ledger import Ledger

KB = Path(__file__).resolve().parents[1] / "importers" / "fixtures" / "kernelbench"


def test_control_arm_times_the_baseline_where_plain_noop_is_forbidden(
    cli, tmp_path: Path, ledger_dir: Path
) -> None:
    root = tmp_path / "tasks"
    res = cli(
        "tasks", "import", "kernelbench", str(KB / "7_scaled_tanh_sum.py"), "--root", str(root)
    )
    assert res.code == 0, res.err
    cfg = write_config(
        tmp_path, root, tasks=["torch2triton/kernelbench/7_scaled_tanh_sum"],
        arms=[
            {"name": "noop", "agent": "noop"},
            {"name": "control", "agent": "noop", "options": {"control": True}},
        ],
    )  # fmt: skip
    assert cli("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", "ctl").code == 0
    with Ledger.open(ledger_dir, registry=ev.REGISTRY) as led:
        final = {
            e.attempt_key.split("#")[1]: e.payload
            for e in led.events(run_id="ctl", types=["Scored"])
            if isinstance(e.payload, ev.Scored) and e.payload.purpose == "final" and e.attempt_key
        }
    plain, control = final["noop"], final["control"]
    assert not plain.correct and "forbidden" in (plain.error or "") + " ".join(plain.hack_flags)
    assert control.correct and control.speedup is not None, control.error
    assert 0.5 < control.speedup < 2.0  # the baseline against itself (CPU timing is loose)
