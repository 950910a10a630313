"""The timing gate across processes: evaluators of one host that share a folder time one at a time.

:class:`aka.eval._gate.Gate` makes timing exclusive among the processes *one*
evaluator started. Several evaluators on one GPU (``aka tasks validate --jobs``, which
validates each task in a process of its own; several trainers' reward pools on one
card) would otherwise time while the others compile, check and compute references on
the same device, and their timing checks fail under that load: on one H200, 13 of 100
KernelBench baselines failed ``timing_noise`` or ``side_stream`` with five to ten at
once and passed alone.

Evaluators that are given the same folder (``AKA_EVAL_HOST_GATE``) share one lock per
device, an ``flock`` on ``<folder>/<device>.lock``. An evaluator whose candidate asks to
time takes it, then stops (``SIGSTOP``) every other member of the folder that has joined
that device, with every process descended from it (its candidate, checker, zygote and
spare processes, and their children), and continues them when its candidate is gone.
Members join by writing ``<folder>/<device>/<pid>`` with their process's start time,
so a pid the system gave to an unrelated process since is never signalled.

The lock dies with its holder, but the processes it stopped would stay stopped: so the
holder writes their pids to ``<device>.stopped`` before it stops them, and whoever takes
the lock next (or :func:`recover`, called by whoever watches the members, when a member
exits) continues whatever is listed there first.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
from pathlib import Path

__all__ = ["HostGate", "recover"]


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _parents() -> dict[int, int]:
    """Every process's parent, from each ``/proc/<pid>/stat``."""
    out: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        out[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def _tree(root: int, parents: dict[int, int], prune: frozenset[int] = frozenset()) -> list[int]:
    """``root`` and every process descended from it, parents first, except the subtrees
    of ``prune``."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo.extend(c for c in children.get(pid, []) if c not in prune)
    return out


def _kin(pid: int, parents: dict[int, int], members: list[int]) -> set[int]:
    """What ``pid``'s lock must never stop: its own processes (its tree, less the
    members that descend from it: evaluators of their own) and its ancestors."""
    out = set(_tree(pid, parents, frozenset(members)))
    while pid in parents and parents[pid] not in out and parents[pid] > 0:
        pid = parents[pid]
        out.add(pid)
    return out


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _slug(device: str) -> str:
    """A file name for a device (``cuda:0`` -> ``cuda_0``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", device)


def _continue_listed(record: Path) -> None:
    """Continue the processes a holder stopped (listed in ``record``) and clear the list."""
    with contextlib.suppress(OSError):
        pids = [int(p) for p in record.read_text().split()]
        _signal_all(pids, signal.SIGCONT)
        record.write_text("")


class HostGate:
    """One process's membership of a host gate folder: join devices, hold and free locks.

    Not thread-safe on its own: :class:`aka.eval._gate.Gate` calls it under its lock.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.pid = os.getpid()
        self._joined: set[str] = set()
        self._held: dict[str, int] = {}  # device -> the lock file's descriptor

    def join(self, device: str) -> None:
        """This process evaluates on ``device``: stopped while another member times it."""
        if device in self._joined:
            return
        members = self.folder / _slug(device)
        members.mkdir(parents=True, exist_ok=True)
        (members / str(self.pid)).write_text(_start_time(self.pid) or "")
        self._joined.add(device)

    def _others(self, device: str) -> list[int]:
        """The other members of ``device`` still alive (the same process, by start time)."""
        out = []
        for member in (self.folder / _slug(device)).glob("[0-9]*"):
            pid = int(member.name)
            if pid == self.pid:
                continue
            with contextlib.suppress(OSError):
                recorded = member.read_text().strip()
                if recorded and recorded == _start_time(pid):
                    out.append(pid)
                    continue
                member.unlink()  # gone, or the pid now names another process
        return out

    def acquire(self, device: str) -> None:
        """Wait for ``device``'s lock, then stop every other member's process tree."""
        self.join(device)
        lock = self.folder / f"{_slug(device)}.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._held[device] = fd
        record = self.folder / f"{_slug(device)}.stopped"
        _continue_listed(record)  # what a holder that died left stopped
        # Members first, so that none starts a process after its tree was read; then
        # their trees, twice, for a process forked while the first walk ran. Never this
        # process, its ancestors or its own tree (its candidate times now).
        members = self._others(device)
        mine = _kin(self.pid, _parents(), members)
        stopped = [m for m in members if m not in mine]
        record.write_text(" ".join(map(str, stopped)))
        _signal_all(stopped, signal.SIGSTOP)
        for _ in range(2):
            parents = _parents()
            mine = _kin(self.pid, parents, members)
            trees = dict.fromkeys(p for m in members for p in _tree(m, parents))
            new = [p for p in trees if p not in stopped and p not in mine]
            stopped += new
            record.write_text(" ".join(map(str, stopped)))
            _signal_all(new, signal.SIGSTOP)

    def release(self, device: str) -> None:
        """Continue what :meth:`acquire` stopped and free ``device``'s lock."""
        fd = self._held.pop(device, None)
        if fd is None:
            return
        _continue_listed(self.folder / f"{_slug(device)}.stopped")
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def leave(self) -> None:
        """No longer a member of any device (the evaluator shuts down)."""
        for device in list(self._held):
            self.release(device)
        for device in self._joined:
            with contextlib.suppress(OSError):
                (self.folder / _slug(device) / str(self.pid)).unlink()
        self._joined.clear()


def recover(folder: Path) -> None:
    """Continue what a lock holder that died left stopped, for every device of ``folder``.

    For whoever watches the members (``aka tasks validate --jobs`` after each task's
    process ends): a lock that can be taken at once has no living holder, so whatever
    its record lists was stopped by one that is gone.
    """
    for lock in folder.glob("*.lock"):
        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:  # gone with its folder
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            _continue_listed(lock.with_suffix(".stopped"))
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
