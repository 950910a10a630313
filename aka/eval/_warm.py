"""Warm evaluation workers: evaluation processes forked from a zygote, not started cold.

With ``AKA_EVAL_WARM=1`` in the evaluator's environment (or :func:`use_warm_workers`),
:class:`aka.eval._proc.Proc` asks :func:`spawn` for its process instead of starting
a fresh interpreter: a per-device :mod:`aka.eval._zygote` (started lazily, shut down at
exit) forks it with the same isolation. :func:`spawn` returns a :class:`WarmProcess`,
which quacks like the ``subprocess.Popen`` it replaces (``pid``, ``stdin``, ``stderr``,
``wait``, ``returncode``). :func:`cache_env` gives candidate processes a compiled-kernel
cache per candidate tree digest. If a zygote cannot start, the caller starts a fresh
interpreter (``spawn`` returns ``None``).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

WARM_ENV = "AKA_EVAL_WARM"
CACHE_ROOT = Path.home() / ".cache" / "aka"
START_TIMEOUT_S = 300.0
_CACHE_KEYS = ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR")

_lock = threading.Lock()
_zygotes: dict[str, _Zygote] = {}
_override: bool | None = None


def use_warm_workers(on: bool | None = True) -> None:
    """Turn warm workers on or off for this process (``None``: follow ``AKA_EVAL_WARM``)."""
    global _override
    _override = on
    if on is False:
        shutdown()


def enabled() -> bool:
    """Whether evaluation processes come from a zygote."""
    return _override if _override is not None else os.environ.get(WARM_ENV, "0") == "1"


def tree_digest(root: Path) -> str:
    """A digest of the files under ``root`` (relative paths and bytes, in sorted order)."""
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(hashlib.blake2b(path.read_bytes(), digest_size=16).digest())
    return h.hexdigest()


def cache_env(module: str, cwd: Path) -> dict[str, str]:
    """Kernel cache variables for a candidate process when warm workers are on.

    The candidate tree is ``cand/`` beside the process's working directory (see
    :func:`aka.eval._pipeline.run_processes`); other processes get nothing.
    """
    cand = cwd.parent / "cand"
    if not enabled() or module != "aka.eval._child" or not cand.is_dir():
        return {}
    base = CACHE_ROOT / "kernels" / tree_digest(cand)
    return {"TRITON_CACHE_DIR": str(base / "triton"), "TORCH_EXTENSIONS_DIR": str(base / "torch")}


class WarmProcess:
    """A forked evaluation process, seen from the evaluator (a ``Popen`` stand-in)."""

    def __init__(self, pid: int, status: socket.socket, stdin: IO[bytes], stderr: IO[bytes]):
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = stdin
        self.stderr = stderr
        self._status = status

    def poll(self) -> int | None:
        """The exit status if the zygote has reported one, else ``None`` (no waiting)."""
        if self.returncode is None:
            self._status.setblocking(False)
            try:
                msg = self._status.recv(4096)
            except BlockingIOError:
                return None
            finally:
                self._status.setblocking(True)
            self._exited(msg)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the zygote to report the exit; ``TimeoutExpired`` as ``Popen.wait``."""
        if self.returncode is not None:
            return self.returncode
        self._status.settimeout(timeout)
        try:
            msg = self._status.recv(4096)
        except TimeoutError:
            raise subprocess.TimeoutExpired("warm evaluation process", timeout or 0) from None
        return self._exited(msg)

    def _exited(self, msg: bytes) -> int:
        # An empty message: the zygote died, and its children with it (PR_SET_PDEATHSIG).
        self.returncode = int(json.loads(msg)["exit"]) if msg else -9
        self._status.close()
        return self.returncode


class _Zygote:
    def __init__(self, env: dict[str, str]):
        from aka.eval._proc import AKA_ROOT, BOOTSTRAP

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOTSTRAP, AKA_ROOT, "aka.eval._zygote",
             str(theirs.fileno())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )  # fmt: skip
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()
        ours.settimeout(START_TIMEOUT_S)
        msg = ours.recv(1 << 16)
        ours.settimeout(None)
        if not msg:
            raise OSError(f"zygote exited during start-up (exit {self.proc.wait()})")
        self.info = json.loads(msg)

    def request(self, head: dict[str, Any], fds: list[int]) -> None:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(head).encode()], fds)

    def status(self) -> dict[str, Any]:
        with self.lock:
            self.sock.send(json.dumps({"op": "status"}).encode())
            return dict(json.loads(self.sock.recv(1 << 20)))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _key(env: dict[str, str]) -> str:
    return json.dumps({k: v for k, v in sorted(env.items()) if k not in _CACHE_KEYS})


def zygote_for(env: dict[str, str]) -> _Zygote:
    """The zygote for this environment (started on first use; cache variables aside)."""
    key = _key(env)
    with _lock:
        if key not in _zygotes:
            _zygotes[key] = _Zygote({k: v for k, v in env.items() if k not in _CACHE_KEYS})
        return _zygotes[key]


def zygote_status(env: dict[str, str]) -> dict[str, Any]:
    """The zygote's pid, whether it initialized CUDA, and the modules it holds."""
    return zygote_for(env).status()


def spawn(module: str, argv: list[str], *, cwd: Path, env: dict[str, str], result_fd: int
          ) -> WarmProcess | None:  # fmt: skip
    """Fork ``module`` from the warm zygote for ``env``; ``None`` if no zygote can start.

    ``result_fd`` (the write end of the result pipe) is passed to the child under the
    same number, so ``argv`` naming it stays valid; the caller closes its copy.
    """
    if not enabled():
        return None
    try:
        zygote = zygote_for(env)
    except OSError as exc:
        print(f"aka: warm evaluation workers unavailable ({exc}); starting fresh", file=sys.stderr)
        return None
    in_r, in_w = os.pipe()
    err_r, err_w = os.pipe()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    head = {"module": module, "argv": argv, "env": env, "cwd": str(cwd), "result_fd": result_fd}
    try:
        zygote.request(head, [in_r, err_w, result_fd, theirs.fileno()])
    finally:
        for fd in (in_r, err_w):
            os.close(fd)
        theirs.close()
    msg = ours.recv(4096)
    if not msg:
        raise OSError("the warm zygote died while forking an evaluation process")
    pid = int(json.loads(msg)["pid"])
    return WarmProcess(pid, ours, os.fdopen(in_w, "wb"), os.fdopen(err_r, "rb"))


def shutdown() -> None:
    """Stop every zygote (their children, spares included, are killed with them)."""
    from aka.eval import _spares

    _spares.clear()
    with _lock:
        for zygote in _zygotes.values():
            zygote.close()
        _zygotes.clear()


atexit.register(shutdown)
