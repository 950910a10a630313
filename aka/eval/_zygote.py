"""A warm parent that forks evaluation processes: torch imported once, CUDA never touched.

Run as ``python -I -c BOOTSTRAP AKA_ROOT aka.eval._zygote CONTROL_FD`` with the
children's environment (:func:`aka.eval._proc.child_env`). It imports torch, triton,
numpy and the evaluation modules, says ``ready`` on the control socket and then serves
fork requests, one message each (``SOCK_SEQPACKET``, file descriptors by
``SCM_RIGHTS``): a JSON header (module, argv, env, cwd, the result fd's number) with the
child's stdin, stderr and result pipe ends plus a status socket. For each it forks a
child that applies what :class:`aka.eval._proc.Proc` applies to a fresh
interpreter (new session, ``PR_SET_PDEATHSIG``, the allowlisted environment, the working
directory, only its own descriptors open) and runs the module as ``__main__``; the
module itself isolates the network and opens the signed result channel, as it does when
started fresh. The status socket gets ``{"pid": N}`` at once and ``{"exit": code}`` once
the child is reaped. When the control socket closes (the evaluator exited or died) every
live child's process group is killed and the zygote exits.

This module never initializes CUDA: a CUDA context does not survive ``fork``; each child
initializes its own. It must not import the ledger or pydantic either.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import traceback
from typing import Any

MAX_MESSAGE = 1 << 20
_MISSING: list[str] = []  # what preload() could not do, for the status reply
# What evaluation processes import, found with aka.eval._profiling (``*.modules.json``):
# torch._inductor.config is imported by torch.use_deterministic_algorithms (the
# poisoned runs), pulling in torch._dynamo and sympy, ~0.5 s per process on the H200.
PRELOAD = ("torch", "numpy", "triton", "triton.language", "torch._inductor.config",
           "torch.profiler", "aka.timing", "aka.eval._candidate", "aka.eval._checker")  # fmt: skip


def preload() -> list[str]:
    """Import what every evaluation process imports; return what failed (best effort)."""
    missing = []
    for name in PRELOAD:
        try:
            __import__(name)
        except Exception:  # triton may be absent where only torch tasks run
            missing.append(name)
    missing += _warm_triton()
    with contextlib.suppress(ImportError):
        from aka.eval._libstate import prime

        prime()  # the library's bindings, inherited by every child (see _libstate)
    return missing


def _warm_triton() -> list[str]:
    """Triton's per-process set-up that needs no GPU, done once here for every child.

    Triton digests its own sources and its multi-megabyte shared library before its
    first compile or cache lookup (``triton_key``, memoized per process), and on a GPU
    machine builds and loads a small C module for its driver. A child would repeat both,
    the driver module once per candidate (each has its own kernel cache). The module is
    built into a private folder, so no candidate can plant what the zygote loads, and
    the driver object is made directly, not through ``torch.cuda.is_available()``
    (which would start CUDA here).
    """
    missing = []
    try:
        import importlib

        for where in ("triton.runtime.cache", "triton.compiler.compiler"):
            key = getattr(importlib.import_module(where), "triton_key", None)
            if key is not None:
                key()
                break
    except Exception:
        missing.append("triton_key")
    if os.environ.get("TRITON_INTERPRET") == "1" or "triton" not in sys.modules:
        return missing
    import tempfile

    saved = os.environ.get("TRITON_CACHE_DIR")
    try:
        from triton.backends.nvidia.driver import CudaDriver
        from triton.runtime.driver import driver

        with tempfile.TemporaryDirectory(prefix="aka-zygote-triton-") as private:
            os.environ["TRITON_CACHE_DIR"] = private
            driver.set_active(CudaDriver())
    except Exception:
        missing.append("triton cuda driver")
    finally:
        os.environ.pop("TRITON_CACHE_DIR", None)
        if saved is not None:
            os.environ["TRITON_CACHE_DIR"] = saved
    return missing


def _die_with_parent(zygote: int) -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() != zygote:  # the zygote died before the prctl took effect
        os._exit(137)


def _exec_child(head: dict[str, Any], fds: list[int], zygote: int, started: int) -> None:
    """In the forked child: isolation as for a fresh interpreter, then the module's main."""
    stdin, stderr, result = fds[0], fds[1], fds[2]
    os.setsid()
    _die_with_parent(zygote)
    os.write(started, b"s")  # its own session now: the evaluator may kill its group
    os.close(started)
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(stdin, 0)
    os.dup2(devnull, 1)
    os.dup2(stderr, 2)
    fd = int(head["result_fd"])
    os.dup2(result, fd)
    os.set_inheritable(fd, True)
    for low, high in ((3, fd), (fd + 1, 65536)):
        os.closerange(low, high)
    os.chdir(head["cwd"])
    os.environ.clear()
    os.environ.update(head["env"])
    sys.argv = [head["module"], *head["argv"]]
    import runpy

    runpy.run_module(head["module"], run_name="__main__", alter_sys=True)


def _fork(head: dict[str, Any], fds: list[int], zygote: int) -> int:
    started_r, started_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(started_w)
        os.read(started_r, 1)  # empty if the child died first; either way no race
        os.close(started_r)
        return pid
    os.close(started_r)
    code = 1
    try:
        _exec_child(head, fds, zygote, started_w)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    return 0  # unreachable


def _send(sock: socket.socket, obj: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        sock.send(json.dumps(obj).encode())


def _status(head: dict[str, Any]) -> dict[str, Any]:
    torch = sys.modules.get("torch")
    cuda = bool(torch is not None and torch.cuda.is_initialized())
    return {"pid": os.getpid(), "cuda_initialized": cuda, "modules": sorted(sys.modules),
            "missing": _MISSING}  # fmt: skip


def serve(control: socket.socket) -> None:
    """Serve fork requests until the control socket closes; then kill what is left."""
    zygote = os.getpid()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    live: dict[int, socket.socket] = {}
    _MISSING[:] = preload()
    _send(control, {"ready": True, "pid": zygote, "missing": _MISSING})
    while True:
        ready, _, _ = select.select([control.fileno(), wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError, InterruptedError):
                os.read(wake_r, 4096)
        _reap(live)
        if control.fileno() not in ready:
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(control, MAX_MESSAGE, 8)
        except OSError:
            msg, fds = b"", []
        if not msg:
            break
        head = json.loads(msg)
        if head.get("op") == "status":
            _send(control, _status(head))
            continue
        status = socket.socket(fileno=fds[3])
        pid = _fork(head, fds[:3], zygote)
        for fd in fds[:3]:
            os.close(fd)
        live[pid] = status
        _send(status, {"pid": pid})
    for pid in live:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while live:
            pid, _ = os.waitpid(-1, 0)
            live.pop(pid, None)


def _reap(live: dict[int, socket.socket]) -> None:
    while live:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        sock = live.pop(pid, None)
        if sock is not None:
            _send(sock, {"exit": os.waitstatus_to_exitcode(st)})
            sock.close()


def main() -> None:
    """Entry point: the control socket's fd number is argv[1]."""
    control = socket.socket(fileno=int(sys.argv[1]))
    serve(control)


if __name__ == "__main__":
    main()
