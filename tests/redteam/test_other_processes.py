"""No candidate reaches another process: not to signal it, slow it, pin it or limit it.

Every evaluation process runs as the same user, and a GPU evaluation has no PID
namespace, so a candidate sees every other process in /proc: another evaluation's
candidate or checker (in a trainer's group of samples evaluated together, its rivals),
the clean timing of its own baseline, the evaluator. ``signal.pidfd_send_signal`` stops or
kills any of them with no audit event at all. The sealed core installs a seccomp filter
on every thread before candidate code is imported; the kernel then refuses every such
call aimed at anything but the candidate's own process. These tests play that
candidate, with host PIDs as on a GPU.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from aka.eval import _native
from aka.eval._pipeline import run_job
from aka.eval._switches import Switches
from aka.eval._workers import Workers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam_corpus import scale_job

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="seccomp is Linux's")

# Each attempt on the victim, then what the process may still do to itself.
_ATTEMPTS = r"""
import os, resource, signal, threading

def read_own_memory():  # process_vm_readv on this very process
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8)
    src = ctypes.create_string_buffer(b"12345678")

    class IoVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    local = IoVec(ctypes.addressof(buf), 8)
    remote = IoVec(ctypes.addressof(src), 8)
    if libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) < 0:
        raise OSError(ctypes.get_errno(), "process_vm_readv")


def io_priority(who):  # ioprio_set(IOPRIO_WHO_PROCESS, who, best effort level 7)
    import ctypes, platform

    number = {"x86_64": 251, "aarch64": 30}[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, 1, who, (2 << 13) | 7) < 0:
        raise OSError(ctypes.get_errno(), "ioprio_set")


def descriptor_owner(victim, how):  # the kernel signals a descriptor's owner when ready
    import fcntl, socket, struct

    left, right = socket.socketpair()
    try:
        if how == "setown":
            fcntl.fcntl(left, fcntl.F_SETOWN, victim)
        elif how == "setown_ex":  # struct f_owner_ex {F_OWNER_PID, pid}
            fcntl.fcntl(left, 15, struct.pack("ii", 1, victim))
        else:  # FIOSETOWN on a socket
            fcntl.ioctl(left, 0x8901, struct.pack("i", victim))
        if victim != os.getpid():  # SIGIO, which ends the owner (this one too)
            fcntl.fcntl(left, fcntl.F_SETFL, fcntl.fcntl(left, fcntl.F_GETFL) | os.O_ASYNC)
            right.send(b"x")
    finally:
        left.close()
        right.close()


def attempts(victim):
    out = {}
    def tried(name, fn):
        try:
            fn()
            out[name] = "done"
        except OSError as exc:
            out[name] = type(exc).__name__

    tried("kill", lambda: os.kill(victim, signal.SIGSTOP))
    tried("probe", lambda: os.kill(victim, 0))
    tried("group", lambda: os.kill(0, 0))
    tried("everyone", lambda: os.kill(-1, 0))
    tried("pidfd_open", lambda: os.pidfd_open(victim))
    folder = os.open(f"/proc/{victim}", os.O_RDONLY | os.O_DIRECTORY)
    tried("proc_pidfd", lambda: signal.pidfd_send_signal(folder, signal.SIGSTOP))
    tried("nice", lambda: os.setpriority(os.PRIO_PROCESS, victim, 19))
    tried("nice_user", lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19))
    tried("affinity", lambda: os.sched_setaffinity(victim, {0}))
    tried("limit", lambda: resource.prlimit(victim, resource.RLIMIT_NOFILE, (16, 16)))
    tried("own_memory", lambda: read_own_memory())
    tried("io_nice", lambda: io_priority(victim))
    tried("owner", lambda: descriptor_owner(victim, "setown"))
    tried("owner_ex", lambda: descriptor_owner(victim, "setown_ex"))
    tried("owner_ioctl", lambda: descriptor_owner(victim, "ioctl"))
    seen = []
    worker = threading.Thread(target=lambda: seen.append(tried("thread_kill",
                              lambda: os.kill(victim, signal.SIGSTOP))))
    worker.start()
    worker.join()
    out["thread_kill"] = out.get("thread_kill")
    tried("self", lambda: os.kill(os.getpid(), 0))
    tried("self_nice", lambda: os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0)))
    tried("self_affinity", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
    tried("self_pidfd", lambda: signal.pidfd_send_signal(os.pidfd_open(os.getpid()), 0))
    tried("self_thread", lambda: signal.pthread_kill(threading.main_thread().ident, 0))
    tried("self_io_nice", lambda: io_priority(0))
    tried("self_owner", lambda: descriptor_owner(os.getpid(), "setown"))
    return out
"""

_REFUSED = ["kill", "probe", "group", "everyone", "pidfd_open", "proc_pidfd", "nice",
            "nice_user", "affinity", "limit", "own_memory", "thread_kill", "io_nice", "owner",
            "owner_ex", "owner_ioctl"]  # fmt: skip
_ALLOWED = ["self", "self_nice", "self_affinity", "self_thread", "self_io_nice", "self_owner"]


def _victim() -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); "
                             "time.sleep(120)"], stdout=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    return proc


def _untouched(proc: subprocess.Popen[bytes]) -> None:
    """Still running, not stopped, at its own priority, affinity and limits."""
    stat = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    assert proc.poll() is None and stat[0] in "SR", stat[0]
    assert os.getpriority(os.PRIO_PROCESS, proc.pid) == 0
    assert os.sched_getaffinity(proc.pid) == os.sched_getaffinity(0)
    import resource

    assert resource.prlimit(proc.pid, resource.RLIMIT_NOFILE)[0] != 16


def test_the_core_s_filter_refuses_every_reach_for_another_process() -> None:
    """Loaded and confined as in an evaluation, a process (threads started before the
    filter included) reaches no other process by signal, pidfd, priority, affinity or
    limit, and still does all of that to itself."""
    path = _native.ensure_built("cpu")
    victim = _victim()
    script = (
        _ATTEMPTS
        + r"""
import importlib.util, json, sys, threading
import torch  # the core links against it
spec = importlib.util.spec_from_file_location("aka_seal", sys.argv[1])
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
go, out = threading.Event(), {}
early = threading.Thread(target=lambda: (go.wait(), out.update(attempts(int(sys.argv[2])))),
                         daemon=True)
early.start()  # a thread older than the filter: covered too
note = core.confine_others()
go.set()
early.join()
print(json.dumps({"note": note, "early": out, "main": attempts(int(sys.argv[2]))}))
"""
    )
    try:
        run = subprocess.run([sys.executable, "-c", script, str(path), str(victim.pid)],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        found = json.loads(run.stdout.strip().splitlines()[-1])
        if "not confined" in found["note"]:
            pytest.skip(f"this kernel refuses the filter: {found['note']}")
        assert found["note"] == "other processes out of reach (seccomp)"
        for where in ("early", "main"):
            got = found[where]
            assert {k: got[k] for k in _REFUSED} == dict.fromkeys(_REFUSED, "PermissionError")
            assert {k: got[k] for k in _ALLOWED} == dict.fromkeys(_ALLOWED, "done")
        _untouched(victim)
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.parametrize("how", ["setown", "setown_ex", "ioctl"])
def test_without_the_filter_a_descriptor_owner_is_a_kill(how: str) -> None:
    """What the filter refuses is real: an unconfined process that makes a victim the
    owner of one of its sockets, set to signal, ends it with ``SIGIO``."""
    victim = _victim()
    script = _ATTEMPTS + f"\ndescriptor_owner({victim.pid}, {how!r})\n"
    try:
        subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
        assert victim.wait(timeout=10) == -signal.SIGIO
    finally:
        victim.kill()
        victim.wait()


_CANDIDATE = (
    _ATTEMPTS
    + """
import torch

VICTIM = {victim}
OUTCOMES = attempts(VICTIM)


def scale(x):
    if any(v == "done" for k, v in OUTCOMES.items() if not k.startswith("self")):
        return torch.zeros_like(x)  # it got through: the verdict says so
    return x * 2 + 1
"""
)


@pytest.mark.parametrize("warm", [True, False])
def test_a_candidate_cannot_stop_or_slow_another_evaluation_s_process(
    tmp_path: Path, warm: bool
) -> None:
    """Through the whole pipeline, with host PIDs as on a GPU, from a warm worker's fork
    and from a fresh interpreter: every reach for the victim fails, and the containment
    note says the filter is on."""
    victim = _victim()
    workers = Workers(Switches(warm=warm, pid_namespace=False))
    try:
        job, root = scale_job(tmp_path, _CANDIDATE.replace("{victim}", str(victim.pid)))
        verdict = run_job(dataclasses.replace(job, time=False), root, workers=workers)
        notes = " ".join(verdict.notes)
        if "other processes not confined" in notes:
            pytest.skip(f"this kernel refuses the filter: {notes}")
        assert "other processes out of reach (seccomp)" in notes, notes
        # The tripwires see some of it (``os.kill`` is an audited call; the others are not),
        # but only flag: the kernel is what refused. Every case's answer is right, which
        # the candidate gives only if nothing got through.
        assert "subprocess" in verdict.flags
        assert verdict.cases and all(c["ok"] for c in verdict.cases), verdict.cases
        time.sleep(0.2)  # a stop sent would have landed
        _untouched(victim)
    finally:
        workers.shutdown()
        victim.send_signal(signal.SIGKILL)
        victim.wait()


_LOCKER = """
import fcntl, os, torch

def take(path, real):  # an flock on a read-only file: the real one, not what covers it
    try:
        fd = os.open(path, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        st = os.fstat(fd)
        return "held" if (st.st_dev, st.st_ino) == real else "a stand-in"
    except OSError as exc:
        return type(exc).__name__

OUTCOME = take({lock!r}, {real!r})


def scale(x):
    if OUTCOME == "held":
        return torch.zeros_like(x)  # it got through: the verdict says so
    return x * 2 + 1
"""


def _cannot_hold(tmp_path: Path, lock: Path, workers: Workers | None = None) -> None:
    """A candidate that takes ``lock`` is judged correct only if what it locked was not
    that file; and nothing holds the file once its evaluation ends."""
    st = lock.stat()
    code = _LOCKER.replace("{lock!r}", repr(str(lock)))
    job, root = scale_job(tmp_path, code.replace("{real!r}", repr((st.st_dev, st.st_ino))))
    verdict = run_job(dataclasses.replace(job, time=False), root, workers=workers)
    notes = " ".join(verdict.notes)
    if "not contained" in notes:
        pytest.skip(f"no mount namespace here: {notes}")
    assert verdict.cases and all(c["ok"] for c in verdict.cases), verdict.cases
    with lock.open() as f:  # nothing holds it now either
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_candidate_cannot_hold_the_evaluators_shared_timing_lock(tmp_path: Path) -> None:
    """Evaluators sharing a host gate time one at a time by an ``flock`` in its folder,
    which a read-only file takes as well: a candidate holding it would keep every other
    evaluator of the host from timing until its own evaluation is killed. The folder is
    hidden from the candidate, wherever it lies (here outside the private temporary
    folder, where a trainer's pools on one card might share it)."""
    gate = Path(tempfile.mkdtemp(prefix="aka-test-gate-", dir=Path.home()))
    lock = gate / "cpu.lock"
    lock.touch()
    workers = Workers(Switches(warm=False, host_gate=gate))
    try:
        _cannot_hold(tmp_path, lock, workers)
    finally:
        workers.shutdown()
        shutil.rmtree(gate, ignore_errors=True)


def test_a_candidate_cannot_hold_the_core_s_build_lock(tmp_path: Path) -> None:
    """Evaluators of a host build a missing evaluation core one at a time under an
    ``flock`` beside the built cores, whose folder candidates must see (their process
    loads the core from it): a candidate holding that lock would keep every evaluator
    that needs a new core (another torch, another device kind) waiting until its own
    evaluation is killed. The lock file is covered in the candidate's view."""
    _cannot_hold(tmp_path, _native.build_lock(_native.ensure_built("cpu")))
