"""Runtime guards of the evaluation child, installed before any candidate code is imported.

None of these is a security boundary: the candidate runs in this process and could, with
enough effort, undo what is done here. They are tripwires that turn the usual reward hacks
into flags with evidence, backed by what *is* kept out of this process (reference
outputs, the ledger, the scoring) and by checks in the parent. See docs/security.md.

- :func:`isolate_network`: a new user + network namespace (only loopback), where Linux
  lets an unprivileged process make one.
- :class:`Channel`: the result pipe, framed and HMAC-signed with a per-evaluation key, so
  bytes the candidate writes to the pipe (``/proc/self/fd/N``) are detected by the parent.
- :class:`Guards`: an audit hook that attributes file, process, ctypes, socket, gc and
  type-patching events to candidate code; a snapshot of the timer and library functions
  the harness relies on; thread and child-process counts.
"""

from __future__ import annotations

import ctypes
import hashlib
import hmac
import json
import os
import struct
import sys
import sysconfig
from pathlib import Path
from types import FrameType
from typing import Any

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MAC_BYTES = 32
HEADER = struct.Struct(">I")


def isolate_network() -> str:
    """Enter new user and network namespaces (loopback only); say what happened.

    Must run while the process is single-threaded (before torch is imported).
    """
    if not sys.platform.startswith("linux"):
        return f"not isolated: {sys.platform} has no network namespaces"
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        return f"not isolated: unshare(CLONE_NEWUSER|CLONE_NEWNET) failed: {os.strerror(err)}"
    try:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    except OSError as exc:
        return f"isolated (network namespace; uid map failed: {exc.strerror})"
    return "isolated (user + network namespace, loopback only)"


# -- the result channel ----------------------------------------------------------------


class Channel:
    """Child side of the result pipe: length-prefixed, HMAC-signed JSON frames."""

    def __init__(self, fd: int, key: bytes):
        self._fd = fd
        self._key = key

    def send(self, obj: Any) -> None:
        """Write one signed frame (blocks while the parent reads)."""
        payload = json.dumps(obj).encode()
        mac = hmac.new(self._key, payload, hashlib.sha256).digest()
        data = HEADER.pack(len(payload)) + mac + payload
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]


def read_frames(data: bytes, key: bytes) -> tuple[list[tuple[int, Any]], str | None]:
    """Parent side: ``(end offset, frame)`` of each valid frame, and any tampering seen."""
    frames: list[tuple[int, Any]] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < HEADER.size + MAC_BYTES:
            return frames, f"{len(data) - pos} stray bytes at offset {pos}"
        (n,) = HEADER.unpack_from(data, pos)
        start = pos + HEADER.size + MAC_BYTES
        mac, payload = data[pos + HEADER.size : start], data[start : start + n]
        if len(payload) != n or not hmac.compare_digest(
            mac, hmac.new(key, payload, hashlib.sha256).digest()
        ):
            # what the bytes were, for telling a forgery from the harness's own mix-up
            return frames, (
                f"unsigned or corrupt frame at offset {pos} (declares {n} bytes, "
                f"{len(data) - start} follow; begins {bytes(data[pos : pos + 16]).hex()})"
            )
        pos = start + n
        frames.append((pos, json.loads(payload)))
    return frames, None


# -- guards ----------------------------------------------------------------------------

_STDLIB = tuple(
    p for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]} if p
)
_EVENT_FLAGS = {
    "subprocess.Popen": "subprocess",
    "os.system": "subprocess",
    "os.fork": "subprocess",
    "os.forkpty": "subprocess",
    "os.posix_spawn": "subprocess",
    "os.spawn": "subprocess",
    "os.exec": "subprocess",
    "os.kill": "subprocess",
    "os.killpg": "subprocess",
    "ctypes.dlopen": "ctypes",
    "ctypes.dlsym": "ctypes",
    "ctypes.cdata": "ctypes",
    "ctypes.cdata/buffer": "ctypes",
    "ctypes.string_at": "ctypes",
    "ctypes.addressof": "ctypes",
    "ctypes.call_function": "ctypes",
    "gc.get_objects": "introspection",
    "gc.get_referrers": "introspection",
    "gc.get_referents": "introspection",
    "sys._current_frames": "introspection",
    "socket.connect": "network",
    "socket.bind": "network",
    "socket.sendto": "network",
    "sys.settrace": "monkeypatch",
    "sys.setprofile": "monkeypatch",
    "object.__setattr__": "monkeypatch",
    "object.__delattr__": "monkeypatch",
    "os.putenv": "env_access",
    "os.unsetenv": "env_access",
}
_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


def _stdlib(filename: str) -> bool:
    """Whether ``filename`` is the standard library's; installed packages never are, even
    where their folder sits under the standard library's prefix (``/usr/lib/python3.12/
    site-packages`` on many systems), so torch's own ctypes calls are torch's."""
    return filename.startswith(_STDLIB) and not any(part in filename for part in _INSTALLED)


# C library functions that change what memory allows, map it, write it behind the
# interpreter's back or start processes: what native code needs to open the sealed core's
# vault or rewrite it.
MEMORY_SYMBOLS = frozenset({
    "mprotect", "pkey_mprotect", "mmap", "mmap64", "mremap", "munmap", "madvise", "syscall",
    "ptrace", "process_vm_readv", "process_vm_writev", "memcpy", "memmove", "memset",
    "pwrite", "pwrite64", "pread", "pread64", "fork", "vfork", "clone", "execve", "dlopen",
    "dlsym", "mlock", "munlock", "userfaultfd", "io_uring_setup",
})  # fmt: skip


def _memory_symbol(args: tuple[Any, ...]) -> bool:
    """Whether a ``ctypes.dlsym`` event looks up one of :data:`MEMORY_SYMBOLS`."""
    name = args[1] if len(args) > 1 else None
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    return isinstance(name, str) and name in MEMORY_SYMBOLS


def _own_memory(args: tuple[Any, ...]) -> bool:
    """Whether an ``open`` names a process's memory file (``/proc/PID/mem``, a thread's):
    nothing in a library opens one, so it is flagged whatever frame asked."""
    path = args[0] if args else None
    if not isinstance(path, str | bytes | os.PathLike):
        return False
    text = os.fsdecode(path)
    return text.startswith("/proc/") and text.rstrip("/").endswith("/mem")


_HARNESS_DIR = str(Path(__file__).resolve().parent) + os.sep


def _innermost(frame: FrameType | None) -> FrameType | None:
    """The innermost frame from ``frame`` out that is neither stdlib nor generated code:
    whose code an audit event is charged to."""
    while frame is not None:
        fn = frame.f_code.co_filename
        if not (_stdlib(fn) or fn.startswith("<")):
            return frame
        frame = frame.f_back
    return None


_CHANNEL_PATHS = ("/proc/self/fd", "/dev/fd", "/proc/self/mem", "/proc/thread-self")


def _children() -> set[str]:
    """The pids of this process's live children (Linux), else none. By pid, not by count:
    the harness's own child (the input drawer, :mod:`aka.eval._drawer`, named by
    :meth:`Guards.harness_children`) ends before the last look, and one the candidate started
    must not take its place unseen. Read from each process's ``stat`` (its parent), not
    from ``/proc/self/task``, which a contained CPU evaluation covers
    (:func:`aka.eval._contain.hide`)."""
    from aka.eval._contain import children

    return {str(pid) for pid in children()}


WATCHED = (
    "time.perf_counter", "time.perf_counter_ns", "time.monotonic", "time.monotonic_ns",
    "time.time", "statistics.median", "statistics.mean", "builtins.sum", "builtins.min",
    "builtins.max", "builtins.sorted", "builtins.len", "builtins.isinstance", "builtins.type",
    "torch.cuda.synchronize", "torch.cuda.Event", "torch.cuda.Event.record",
    "torch.cuda.Event.elapsed_time", "torch.cuda.Event.synchronize", "torch.cuda._sleep",
    "torch.cuda.CUDAGraph", "torch.cuda.CUDAGraph.replay", "torch.cuda.graph",
    "torch.cuda.current_stream", "torch.Tensor.zero_", "torch.equal", "torch.Tensor.clone",
    "torch.Tensor.copy_", "torch.Tensor.cpu", "torch.Tensor.to",
)  # fmt: skip


def _resolve_obj(dotted: str, roots: dict[str, Any]) -> Any:
    """``dotted`` looked up from the longest matching root module, without descriptors."""
    for prefix in sorted(roots, key=len, reverse=True):
        if dotted == prefix:
            return roots[prefix]
        if dotted.startswith(prefix + "."):
            obj = roots[prefix]
            for part in dotted[len(prefix) + 1 :].split("."):
                if isinstance(obj, type) and part in vars(obj):
                    obj = vars(obj)[part]
                else:
                    obj = getattr(obj, part, None)
            return obj
    return None


def _watched(roots: dict[str, Any], scanned: list[str]) -> dict[str, Any]:
    """Name -> object for :data:`WATCHED` plus every function and method of ``scanned``."""
    names = list(WATCHED)
    for mod_name in scanned:
        for attr, obj in vars(roots[mod_name]).items():
            if attr.startswith("__") or not callable(obj):
                continue
            if getattr(obj, "__module__", None) != mod_name:
                continue  # imported names: their own module is scanned if it matters
            names.append(f"{mod_name}.{attr}")
            if isinstance(obj, type):
                names += [f"{mod_name}.{attr}.{m}" for m, f in vars(obj).items() if callable(f)]
    return {n: _resolve_obj(n, roots) for n in names}


class Guards:
    """Tripwires around candidate code; ``flags`` collects what fired, with evidence."""

    def __init__(self, cand_dir: Path, deny_roots: list[Path], allow_roots: list[Path]):
        self.cand_dir = str(cand_dir.resolve())
        self.deny = [str(p.resolve()) for p in deny_roots]
        self.allow = [str(p.resolve()) for p in allow_roots]
        self.flags: list[dict[str, str]] = []
        self.active = False
        self._roots: dict[str, Any] = {}
        self._snapshot: dict[str, Any] = {}
        self._threads: set[int] = set()
        self._procs: set[str] = set()

    def flag(self, name: str, evidence: str) -> None:
        """Record one finding (deduplicated by flag and evidence)."""
        item = {"flag": name, "evidence": evidence[:300]}
        if item not in self.flags and len(self.flags) < 64:
            self.flags.append(item)

    # -- attribution -----------------------------------------------------------------
    def _candidate_frame(self, frame: FrameType | None) -> FrameType | None:
        """The innermost frame that is neither stdlib nor generated code, if candidate's."""
        inner = _innermost(frame)
        return (
            inner
            if inner is not None and inner.f_code.co_filename.startswith(self.cand_dir)
            else None
        )

    @staticmethod
    def _harness(frame: FrameType | None) -> bool:
        """Whether the innermost frame outside the standard library is the evaluator's own."""
        inner = _innermost(frame)
        return inner is not None and inner.f_code.co_filename.startswith(_HARNESS_DIR)

    def _candidate_stack(self, frame: FrameType | None) -> FrameType | None:
        """Any frame of candidate code on a thread's stack (threads libraries start and
        park in their own code, e.g. compile pools, are not the candidate's)."""
        while frame is not None:
            if frame.f_code.co_filename.startswith(self.cand_dir):
                return frame
            frame = frame.f_back
        return None

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active or event.startswith(("import", "exec", "compile", "marshal")):
            return
        flag = _EVENT_FLAGS.get(event)
        if flag is None and event != "open":
            return
        if event == "open" and _own_memory(args):  # from any frame
            self.flag("result_channel_tamper", f"opens {os.fsdecode(args[0])}")
            return
        if event == "ctypes.dlsym" and _memory_symbol(args) and not self._harness(sys._getframe(1)):
            # whatever frame asked: a red-team file looked ``mprotect`` up through a library
            # function it called (``torch.utils._pytree.tree_map``, the innermost frame) and
            # opened the vault; libraries look up their own (NVML's, on a GPU), never these
            self.flag("ctypes", f"looks up {_short(args)}")
            return
        frame = self._candidate_frame(sys._getframe(1))
        if frame is None:
            return
        where = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
        if event == "open":
            self._open(args, where)
        elif event.startswith("object.__") and (
            not self._patches_library(args) or self._library_code(sys._getframe(1))
        ):
            return
        else:
            self.flag(flag or event, f"{where}: {event} {_short(args)}")

    def _library_code(self, frame: FrameType | None) -> bool:
        """Whether a library, not the candidate, made the assignment seen in ``frame``.

        Walking out from the assignment: standard-library frames (``unittest.mock``,
        ``dataclasses``) are skipped; the first other frame decides. Candidate code: the
        candidate patched. An installed package's code, or an import in progress (Triton
        imports and sets up its own classes during a candidate's first launch): the
        library at work.
        """
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(self.cand_dir):
                return False
            if name.startswith("<frozen importlib"):
                return True
            if not _stdlib(name):
                return True
            frame = frame.f_back
        return True

    def _patches_library(self, args: tuple[Any, ...]) -> bool:
        obj = args[0] if args else None
        mod = getattr(obj, "__module__", "") or ""
        return isinstance(obj, type) and mod.split(".")[0] in {
            "torch", "triton", "time", "aka", "numpy", "builtins", "statistics",
        }  # fmt: skip

    def _open(self, args: tuple[Any, ...], where: str) -> None:
        path = args[0] if args else None
        if isinstance(path, int):
            self.flag("result_channel_tamper", f"{where}: opens file descriptor {path}")
            return
        if not isinstance(path, str | bytes | os.PathLike):
            return
        text = os.fsdecode(path)
        if text.startswith(_CHANNEL_PATHS) or "/fd/" in text:
            self.flag("result_channel_tamper", f"{where}: opens {text}")
            return
        real = os.path.realpath(text)

        def under(roots: list[str]) -> bool:
            return any(real == r or real.startswith(r + os.sep) for r in roots)

        if under([self.cand_dir]):
            return  # its own files (a CUDA task's kernel.cu)
        if under(self.deny):
            self.flag("harness_access", f"{where}: opens {text}")
        elif not (under(self.allow) or _stdlib(real)):
            self.flag("file_access", f"{where}: opens {text}")

    # -- state snapshots -------------------------------------------------------------
    def install(self, scanned: list[str]) -> None:
        """Snapshot watched functions and counts, add the audit hook (irremovable).

        Args:
            scanned: modules (already imported) whose every function is watched too:
                the timing engine's.
        """
        import builtins
        import statistics
        import time

        import torch

        self._roots = {"time": time, "statistics": statistics, "builtins": builtins}
        self._roots.update({"torch": torch, **{m: sys.modules[m] for m in scanned}})
        self._snapshot = _watched(self._roots, scanned)
        self._threads = set(sys._current_frames())
        self._procs = _children()
        sys.addaudithook(self._hook)
        self.active = True

    def harness_children(self) -> None:
        """Every child alive now is the harness's (the input drawer, forked after
        :meth:`install` and before any candidate code). Taken from ``/proc`` again rather
        than by the pid ``fork`` returned: in a PID namespace the two number it apart."""
        self._procs |= _children()

    def check_state(self, stage: str) -> None:
        """After a stage: watched functions unchanged, no new threads or processes."""
        changed = [
            name
            for name, obj in self._snapshot.items()
            if _resolve_obj(name, self._roots) is not obj
        ]
        if changed:
            self.flag("timer_tamper", f"{stage}: replaced {', '.join(sorted(changed)[:6])}")
        for ident, frame in sys._current_frames().items():
            if ident in self._threads:
                continue
            mine = self._candidate_stack(frame)
            if mine is not None:
                self.flag(
                    "background_thread",
                    f"{stage}: a thread is running candidate code at "
                    f"{Path(mine.f_code.co_filename).name}:{mine.f_lineno}",
                )
        new = _children() - self._procs
        if new:
            self.flag("background_process", f"{stage}: {len(new)} child process(es)")


def _short(args: tuple[Any, ...]) -> str:
    text = repr(args)
    return text if len(text) < 120 else text[:117] + "..."
