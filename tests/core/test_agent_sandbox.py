"""An agent cannot see the ledger nor the run keys, by path or through /proc, and still scores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from arena_helpers import write_config

from aka import events as ev
from aka.events import REGISTRY
from aka_ledger import Ledger

_PROBE = r"""
import json, os, subprocess, sys
from pathlib import Path

ledger, keys = LEDGER, KEYS


def listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return "error: " + (exc.strerror or str(exc))


def read(path):
    try:
        return Path(path).read_bytes().hex()
    except OSError as exc:
        return "error: " + (exc.strerror or str(exc))


found = {"ledger": listing(ledger), "keys": listing(keys), "key": read(keys + "/sbx.key")}
# through /proc: every process this agent can see, its command line, environment, root
mentions, through_root = [], {}
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    for what in ("cmdline", "environ"):
        try:
            text = Path(f"/proc/{pid}/{what}").read_bytes()
        except OSError:
            continue
        if ledger.encode() in text or keys.encode() in text or b"--ledger" in text:
            mentions.append(f"{pid}/{what}")
    through_root[pid] = listing(f"/proc/{pid}/root{ledger}")
found["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
found["mentions"] = mentions
found["through_root"] = through_root
found["parent"] = read(f"/proc/{os.getppid()}/cmdline")
done = subprocess.run(["aka", "eval"], capture_output=True, text=True, timeout=600)
found["eval_rc"] = done.returncode
print("PROBE " + json.dumps(found))
"""


RUN = ("--run-id", "sbx")


def _namespaces_allowed() -> bool:
    """Whether this kernel lets a child make mount and PID namespaces (root or userns)."""
    probe = (
        "import ctypes, os, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "ok = os.geteuid() == 0 or libc.unshare(0x10000000) == 0\n"
        "sys.exit(0 if ok and libc.unshare(0x00020000 | 0x20000000) == 0 else 1)\n"
    )
    return subprocess.run([sys.executable, "-c", probe]).returncode == 0


def _probe(tmp_path: Path) -> list[str]:
    """The probe agent's command; the paths it looks for are in its text, not its argv."""
    script = tmp_path / "probe.py"
    paths = {"LEDGER": str(tmp_path / "ledger"), "KEYS": str(tmp_path / "keys")}
    script.write_text("".join(f"{k} = {v!r}\n" for k, v in paths.items()) + _PROBE)
    return [sys.executable, str(script)]


def _run(tmp_path: Path, tasks_root: Path, options: dict[str, object]) -> tuple[Path, Path]:
    keys = tmp_path / "keys"
    ledger_dir = tmp_path / "ledger"
    arm = {"name": "probe", "agent": "command", "options": options}
    cfg = write_config(tmp_path, tasks_root, arms=[arm])
    env = {**os.environ, "AKA_KEY_DIR": str(keys)}
    done = subprocess.run(
        [sys.executable, "-m", "aka.cli", "run", str(cfg), "--ledger", str(ledger_dir), *RUN],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return ledger_dir, keys


def _probe_and_items(ledger_dir: Path) -> tuple[dict[str, object], list[dict[str, object]], float]:
    with Ledger.open(ledger_dir, registry=REGISTRY, create=False) as led:
        events = led.events(run_id="sbx")
        finished = next(e.payload for e in events if isinstance(e.payload, ev.AgentFinished))
        assert finished.transcript is not None
        transcript = led.cas.get(finished.transcript).decode()
        items = [
            {"text": item.text, **json.loads(item.data)}
            for e in events
            if isinstance(e.payload, ev.AgentOutput)
            for item in e.payload.items
            if item.kind == "log"
        ]
        scores = [
            e.payload.score
            for e in events
            if isinstance(e.payload, ev.Scored) and e.payload.purpose == "final"
        ]
    line = next(x for x in transcript.splitlines() if x.startswith("PROBE "))
    assert len(scores) == 1 and scores[0] is not None
    return json.loads(line.removeprefix("PROBE ")), items, scores[0]


@pytest.mark.skipif(not _namespaces_allowed(), reason="this kernel refuses namespaces")
def test_an_agent_finds_neither_the_run_key_nor_the_ledger(
    tmp_path: Path, tasks_root: Path
) -> None:
    command = _probe(tmp_path)
    ledger_dir, keys = _run(tmp_path, tasks_root, {"command": command})
    assert (keys / "sbx.key").is_file() and (ledger_dir / "events").is_dir()  # there, unseen
    found, items, score = _probe_and_items(ledger_dir)
    assert found["ledger"] == [] and found["keys"] == []
    assert str(found["key"]).startswith("error:")
    assert found["mentions"] == [], "a process visible to the agent names the ledger or keys"
    assert all(v == [] or str(v).startswith("error") for v in found["through_root"].values())  # type: ignore[union-attr]
    assert found["pids"] == [1, 2], "only the namespace's init and the agent itself"
    assert bytes.fromhex(str(found["parent"])).split(b"\0")[:4] == [
        sys.executable.encode(),
        b"-I",
        b"-m",
        b"aka_agents._sandbox",
    ]
    assert found["eval_rc"] == 0, "aka eval reached the self-evaluation socket"
    [ended] = [i for i in items if i["text"] == "process ended"]
    assert str(ended["containment"]).startswith("contained (2 paths hidden")
    assert "own PID namespace" in str(ended["containment"])
    assert score > 120.0, "compiled and correct: the sandbox changed nothing of the scoring"


def test_an_uncontained_agent_is_recorded_as_such(tmp_path: Path, tasks_root: Path) -> None:
    """The documented fallback (``contain: false``, as where namespaces are refused)."""
    command = _probe(tmp_path)
    ledger_dir, _ = _run(tmp_path, tasks_root, {"command": command, "contain": False})
    found, items, _ = _probe_and_items(ledger_dir)
    assert "events" in found["ledger"]  # type: ignore[operator]
    assert any(i["text"] == "the agent ran not contained: options.contain is false" for i in items)
