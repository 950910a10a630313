"""Finding and stopping every process an agent run started.

A run's processes are those in its process group, plus those that left the group with
``setsid`` but kept the per-run marker variable (``AKA_AGENT_RUN``) in their environment,
found through ``/proc/<pid>/environ``. Without ``/proc`` only the process group is seen.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

MARKER_VAR = "AKA_AGENT_RUN"


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, process group) of ``pid`` from /proc, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[2])


def _marked(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def tree_members(pgid: int, marker: str) -> list[int]:
    """Live processes of a run: in process group ``pgid`` or carrying ``marker``.

    Zombies are skipped (they are dead, only not reaped). Without /proc the members
    cannot be listed: returns ``[pgid]`` while the group has any process, else [].
    """
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    me = os.getpid()
    needle = f"{MARKER_VAR}={marker}".encode()
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        stat = _proc_stat(pid)
        if stat is None or stat[0] in ("Z", "X"):
            continue
        if stat[1] == pgid or _marked(pid, needle):
            found.append(pid)
    return found


def _signal(pids: Sequence[int], pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def stop_tree(pgid: int, marker: str, grace: float) -> int:
    """SIGTERM every process of the run, wait up to ``grace``, SIGKILL the rest.

    Returns:
        how many processes were found alive and signalled.
    """
    members = tree_members(pgid, marker)
    if not members:
        return 0
    _signal(members, pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not tree_members(pgid, marker):
            return len(members)
        time.sleep(0.02)
    _signal(tree_members(pgid, marker), pgid, signal.SIGKILL)
    return len(members)
