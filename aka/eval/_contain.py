"""Containment of the candidate process: a PID namespace, hidden paths, resource limits.

These are kernel boundaries, not Python guards: candidate code in the process cannot undo
them once capabilities are dropped.

- :func:`contain_descendants` (first thing in the process, before CUDA starts): the
  process becomes non-dumpable (:func:`not_dumpable`: no other process of the same user
  can read or write its memory) and forks; the parent, which never runs candidate code,
  is a child subreaper that kills every descendant left when the evaluation ends, so a
  double-forked, ``setsid`` daemon cannot outlive it; for CPU evaluations the child is also PID 1 of a new PID
  namespace (the kernel kills the rest with it). CUDA evaluations skip the namespace:
  under gVisor's GPU proxy (the H200 machines) CUDA does not start inside one.
- :func:`hide` (after the harness has loaded the reference's ``make_inputs`` and the
  baseline, before candidate code is imported): a private mount namespace in which the
  task folder, the output folder, the ledger and the task suite are covered by empty
  read-only mounts, every other mount is read-only but the process's own private
  folders (temporary folder, ``/dev/shm``, working folder, kernel caches), ``/proc``
  shows only this namespace's processes (so no other process's root or files are
  reachable through it), and every capability is dropped so none of it can be undone.
  Read-only matters as much as hidden: whatever the candidate could write, a process
  that decides (the checker, the clean baseline timing, the next evaluation) might
  later read: a ``.pth`` file in site-packages, the sealed core's built library, a
  Triton cache entry, a module beside a later process's working folder.
- :func:`limit`: address space (CPU evaluations only: CUDA reserves far more virtual
  memory than it uses), file size and open files.

Each needs privileges the kernel may not grant (root, or an unprivileged user namespace);
what was not possible is said in the returned status, recorded with the score.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import resource
import stat
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
# Per-mount options a read-only remount keeps (dropping one is refused where it is locked).
_KEPT_OPTIONS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                 "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}  # fmt: skip
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 24, 38, 36
PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3
_LAST_CAP = 63

# The argument an evaluation process gets when the evaluator's ``pid_namespace`` switch
# is off (aka.eval._switches): only to measure what the PID namespace costs or to debug.
NO_PIDNS = "--no-pidns"
_libc: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _err(what: str) -> str:
    return f"{what} failed: {os.strerror(ctypes.get_errno())}"


ESCAPED_EXIT = 86  # the reaper's exit status when it had to kill what the evaluation left


def children() -> list[int]:
    """Live processes whose parent is this one (descendants reparented to us, and our
    children), from each process's ``stat``; none where ``/proc`` cannot be listed. By
    this process's pid as ``/proc`` numbers it: a network-isolated evaluation is PID 1 of
    its own namespace but lists the machine's ``/proc``."""
    out: list[int] = []
    try:
        me = os.readlink("/proc/self")
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            out.append(int(entry))
    return out


def _reap(child: int) -> int:
    """In the reaper: wait for ``child``, then kill and reap whatever was left behind."""
    import signal

    def stop(signum: int, frame: object) -> None:  # the evaluator's timeout: take all down
        for pid in [child, *children()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    code = code if code >= 0 else 128 - code
    escaped = False
    for _ in range(100):
        left = children()
        if not left:
            break
        escaped = True
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
    return ESCAPED_EXIT if escaped and code == 0 else code


def contain_descendants(*, pid_namespace: bool) -> str:
    """Fork; only the child returns, and nothing it starts outlives the evaluation.

    The parent never runs candidate code: it becomes a *child subreaper* (every orphaned
    descendant, a double-forked ``setsid`` daemon included, is reparented to it), waits for
    the child, then kills and reaps every process left and exits with the child's status,
    or :data:`ESCAPED_EXIT` if it had to kill something. With ``pid_namespace`` (and the
    privilege for it) the child is also PID 1 of a new PID namespace, whose processes the
    kernel kills when it exits. Must run before any thread or CUDA context exists.
    """
    if not sys.platform.startswith("linux"):
        return f"no reaper: {sys.platform}"
    not_dumpable()
    ns = "no PID namespace: not asked"
    if pid_namespace:
        ns = (
            "own PID namespace"
            if _c().unshare(CLONE_NEWPID) == 0
            else "no PID namespace: " + _err("unshare(CLONE_NEWPID)")
        )
    _c().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    pid = os.fork()
    if pid == 0:
        _c().prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)  # the reaper killed: so is the evaluation
        return f"reaped descendants; {ns}"
    os._exit(_reap(pid))


def not_dumpable() -> bool:
    """Make this process (and what it forks) unreachable through ``/proc/PID/mem``,
    ``process_vm_writev`` and ``ptrace`` from any process without ``CAP_SYS_PTRACE``.

    Every evaluation process runs as the same user, and a candidate's process drops its
    capabilities, which otherwise leaves it able to write the memory of any other process
    that did the same: another evaluation's candidate, a clean baseline timing, its
    sealed core's samples. A CUDA evaluation has no PID namespace to hide them (under
    gVisor's GPU proxy CUDA does not start in one). Returns whether it took effect.
    """
    libc = _c()
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    return int(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)) == 0


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> int:
    enc = [None if v is None else v.encode() for v in (src, target, fstype, data)]
    return int(_c().mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]))


def hide(
    paths: list[str],
    *,
    keep: str | None = None,
    private: tuple[str, ...] = (),
    private_bytes: int = 1 << 30,
    fresh: tuple[str, ...] = (),
    read_only: bool = False,
    writable: tuple[str, ...] = (),
    executable: tuple[str, ...] | None = None,
    enabled: bool = True,
) -> str:
    """A private mount namespace where only what the candidate may see is left.

    Args:
        paths: covered by empty read-only mounts (folders) or ``/dev/null`` (files): the
            task folder, the output folder, the ledger, the task suite.
        keep: the evaluation's own folder, bound back at its path after ``private``
            folders are replaced (it usually lives in one of them), with the running
            interpreter's own folders when they live there too (:func:`_kept`).
        private: replaced by empty writable tmpfs mounts of ``private_bytes`` each (the
            temporary folder and ``/dev/shm``): other evaluations' folders vanish, and
            what the candidate writes there is bounded and dies with it.
        private_bytes: size of each private tmpfs.
        fresh: folders inside ``keep`` replaced by private tmpfs mounts after it is bound
            back (the working folder: evaluations' processes share it on disk).
        read_only: make every mount read-only (:func:`_read_only`) but the private and
            fresh ones and ``writable`` (this candidate tree's own kernel caches). An
            agent's sandbox leaves it off: agents write their workspace and home.
        executable: with ``read_only``, the only folders the process may write where the
            kernel also maps files as code (Triton's cache: Triton compiles its launcher
            there and loads it). Every other folder it can write is mounted ``noexec``,
            so a library the candidate builds or writes cannot be loaded
            (:mod:`aka.eval._foreign`); one that lies in a private folder gets an
            executable tmpfs of its own. ``None`` leaves every folder executable.
        enabled: ``False`` returns at once (recorded as disabled).

    Returns what was done (``contained (...)``) or why not (``not contained: ...``).
    """
    if not enabled:
        return "not contained: disabled"
    if not sys.platform.startswith("linux"):
        return f"not contained: {sys.platform}"
    if _c().unshare(CLONE_NEWNS) != 0:
        return "not contained: " + _err("unshare(CLONE_NEWNS)")
    if _mount(None, "/", None, MS_REC | MS_PRIVATE, None) != 0:
        return "not contained: " + _err("making mounts private")
    replaced = sorted({os.path.realpath(p) for p in private if os.path.isdir(p)})
    back = _kept(keep, replaced)
    opts = f"size={private_bytes},mode=1777"  # every private tmpfs, fresh ones included
    noexec = _NoExec(read_only and executable is not None)
    held = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in back}
    try:
        for folder in replaced:
            if noexec.tmpfs(folder, opts) != 0:
                return "not contained: " + _err(f"replacing {folder}")
        for path, fd in held.items():
            os.makedirs(path, exist_ok=True)
            if _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None) != 0:
                return "not contained: " + _err(f"binding {path} back")
    finally:
        for fd in held.values():
            os.close(fd)
    for folder in sorted({os.path.realpath(p) for p in fresh if os.path.isdir(p)}):
        if noexec.tmpfs(folder, opts) != 0:
            return "not contained: " + _err(f"replacing {folder}")
    kept = sorted({os.path.realpath(p) for p in writable if os.path.isdir(p)})
    code = {os.path.realpath(p) for p in executable or ()}
    ro = ""
    if read_only:
        for folder in kept:
            if _mount(folder, folder, None, MS_BIND, None) != 0:
                return "not contained: " + _err(f"binding {folder}")
            if folder not in code:
                noexec.bound(folder)
        for folder in sorted(code - set(kept)):  # a cache inside a private folder
            noexec.carve(folder, [*replaced, *fresh], opts)
        left = _read_only(skip={*replaced, *(os.path.realpath(p) for p in fresh), *kept, *code})
        ro = (
            f", read-only but {len(kept)} cache(s)"
            + (f", {len(left)} left writable: {', '.join(left[:3])}" if left else "")
            + noexec.status()
        )
    hidden = 0
    for path in sorted({os.path.realpath(p) for p in paths if p}):
        if os.path.isdir(path):
            rc = _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                        "size=4k,mode=0555")  # fmt: skip
        elif os.path.exists(path):
            rc = _mount("/dev/null", path, None, MS_BIND, None)
        else:
            continue
        if rc != 0:
            return "not contained: " + _err(f"hiding {path}")
        hidden += 1
    proc = _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) == 0
    mem = _cover_own_memory()
    # The working directory still points into the tree as it was before these mounts
    # (``..`` from it, or /proc/self/cwd, reaches every covered path): re-enter it by name.
    try:
        os.chdir(os.getcwd())
    except OSError:
        os.chdir("/")
    _drop_capabilities()
    return (
        f"contained ({hidden} paths hidden, {len(private) + len(fresh)} private tmpfs{ro}, "
        f"/proc {'private' if proc else 'shared'}; {mem})"
    )


def _cover_own_memory() -> str:
    """This process's memory files in ``/proc`` covered by ``/dev/null`` before its
    capabilities go: ``/proc/self/mem`` ignores page protections, so the sealed core's
    vault (its samples, the operators it charged, its keys; no access while candidate code
    runs) was read and rewritten through it, a timing forged to any value from plain
    Python (a red-team round opened it through a library's frame, past the audit hook).
    Every thread's file reads the same memory, so each thread's is covered too, under
    ``/proc/PID/task`` and at ``/proc/TID``. The covers cannot be undone without the
    capabilities dropped next. Private or not (a network-isolated process is in a user
    namespace that cannot mount a ``/proc`` of its own), this ``/proc`` names this process
    as ``/proc/self`` does. A thread started later has files of its own, uncovered (the
    sentry names a thread alive in a watched stretch: a tripwire). Returns what was done,
    for the containment status."""
    try:
        me = os.readlink("/proc/self")  # this process's pid as this /proc numbers it
        threads = os.listdir(f"/proc/{me}/task")
    except OSError as exc:
        return f"own memory open: {exc}"
    for tid in threads:
        for path in (f"/proc/{tid}/mem", f"/proc/{me}/task/{tid}/mem"):
            if _mount("/dev/null", path, None, MS_BIND, None) != 0:
                return "own memory open: " + _err(f"covering {path}")
    return "own memory covered"


class _NoExec:
    """Mounts the writable folders of :func:`hide` ``noexec`` (when ``on``), and keeps
    going without it where a platform refuses, saying so in the status."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.refused: list[str] = []

    def tmpfs(self, folder: str, opts: str) -> int:
        flags = MS_NOSUID | MS_NODEV
        if self.on and _mount("tmpfs", folder, "tmpfs", flags | MS_NOEXEC, opts) == 0:
            return 0
        if self.on:
            self.refused.append(folder)
        return _mount("tmpfs", folder, "tmpfs", flags, opts)

    def bound(self, folder: str) -> None:
        if not self.on:
            return
        options = dict(mounts()).get(folder, set())
        if _remount(folder, options | {"noexec"}, read_only=False) != 0:
            self.refused.append(folder)

    def carve(self, folder: str, private: list[str], opts: str) -> None:
        """An executable tmpfs at ``folder``, inside one of the ``private`` tmpfs; where
        that is refused, the private one it lies in is made executable again (a Triton
        cache that cannot map its launcher breaks every honest candidate)."""
        os.makedirs(folder, exist_ok=True)
        if _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0 or not self.on:
            return
        self.refused.append(folder)
        for outer in private:
            if folder.startswith(os.path.realpath(outer).rstrip("/") + "/"):
                _mount(None, outer, None, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts)

    def status(self) -> str:
        if not self.on:
            return ""
        if self.refused:
            return f", noexec refused: {', '.join(self.refused[:3])}"
        return ", writable folders noexec"


def mounts() -> list[tuple[str, set[str]]]:
    """This mount namespace's mounts, in order: (mount point, per-mount options)."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split(" ")
            if len(fields) > 5:
                point = fields[4].encode("latin-1", "surrogateescape").decode("unicode_escape")
                out.append((point, set(fields[5].split(","))))
    return out


def _read_only(skip: set[str]) -> list[str]:
    """Remount every mount read-only except those at ``skip`` and ``/proc`` (which
    :func:`hide` mounts afresh); the mount points that refused.

    A bind remount changes this namespace's view only. Writes fail with ``EROFS``, which
    Python (bytecode) and CUDA (its JIT cache) take as "no cache". ``/dev`` is included:
    it is shared by every process of the machine, and a candidate that could rename or
    remove an entry there (``/dev/null``, a GPU's node) would break the processes that
    come after it, the clean baseline timing that checks its own among them. Device nodes
    still open for writing on a read-only mount (the kernel exempts them); where a
    platform does not, :func:`_dev_checked` gives ``/dev`` back its writes.
    """
    refused = []
    before = _openable_devices()
    for point, options in _remountable(skip):
        if _remount(point, options, read_only=True) != 0:
            refused.append(point)
    return refused + _dev_checked(before, skip)


def _remountable(skip: set[str]) -> list[tuple[str, set[str]]]:
    """The writable mounts :func:`_read_only` makes read-only, with their options."""
    out = []
    for point, options in mounts():
        special = point == "/proc" or point.startswith("/proc/")
        if point not in skip and not special and "ro" not in options:
            out.append((point, options))
    return out


def _remount(point: str, options: set[str], *, read_only: bool) -> int:
    flags = MS_BIND | MS_REMOUNT | (MS_RDONLY if read_only else 0)
    for name in options & _KEPT_OPTIONS.keys():
        flags |= _KEPT_OPTIONS[name]
    return _mount(None, point, None, flags, None)


DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
"""Device nodes a process opens for writing after it is contained (``subprocess.DEVNULL``,
a compiler's output), besides every GPU node (``/dev/nvidia*``)."""


def _openable_devices() -> set[str]:
    """The device nodes this process can open for writing now."""
    found = set()
    for path in (*DEVICES, *sorted(glob.glob("/dev/nvidia*"))):
        try:
            if not stat.S_ISCHR(os.stat(path).st_mode):
                continue
            os.close(os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK))
        except OSError:
            continue
        found.add(path)
    return found


def _dev_checked(before: set[str], skip: set[str]) -> list[str]:
    """``/dev`` made writable again when a node that opened before it turned read-only no
    longer does (a platform that applies a read-only mount to device nodes); the mount
    points given back, to report as left writable."""
    lost = before - _openable_devices()
    if not lost:
        return []
    given = []
    for point, options in mounts():
        under = point == "/dev" or point.startswith("/dev/")
        if under and point not in skip and _remount(point, options, read_only=False) == 0:
            given.append(f"{point} (read-only refused {sorted(lost)[0]})")
    return given


def _kept(keep: str | None, replaced: list[str]) -> list[str]:
    """Folders inside ``replaced`` ones to bind back: the evaluation's own (``keep``) and
    the running interpreter's (its prefixes and every folder on ``sys.path``, where Python
    imports lazily, Triton's compiler included, when aka or its environment live in the
    temporary folder). Outermost first; one inside another kept folder is covered by it.
    """
    wanted = [keep] if keep else []
    wanted += [sys.prefix, sys.base_prefix, *sys.path]
    inside = {
        os.path.realpath(p)
        for p in wanted
        if p and os.path.isdir(p)
        and any(os.path.realpath(p).startswith(f.rstrip("/") + "/") for f in replaced)
    }  # fmt: skip
    out: list[str] = []
    for path in sorted(inside, key=len):
        if not any(path.startswith(k + "/") for k in out):
            out.append(path)
    return out


def _drop_capabilities() -> None:
    """No capability left to unmount, remount, or reach other processes with."""
    libc = _c()
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    for cap in range(_LAST_CAP + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]  # fmt: skip

    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    libc.capset(ctypes.byref(header), data)


def limit(device: str, *, max_file_bytes: int, address_space_bytes: int | None) -> list[str]:
    """Resource limits for this process and its children; returns what could not be set."""
    failed: list[str] = []
    wanted = [(resource.RLIMIT_FSIZE, max_file_bytes)]
    if address_space_bytes and not device.startswith("cuda"):
        wanted.append((resource.RLIMIT_AS, address_space_bytes))
    for which, value in wanted:
        try:
            _, hard = resource.getrlimit(which)
            cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (cap, cap))
        except (ValueError, OSError) as exc:
            failed.append(f"rlimit {which}: {exc}")
    return failed
