"""Warm evaluation workers: evaluation processes forked from a zygote, not started cold.

With warm workers on (the default; :class:`aka.eval._switches.Switches`),
:class:`aka.eval._proc.Proc` asks :meth:`Zygotes.spawn` for its process instead of
starting a fresh interpreter: a :mod:`aka.eval._zygote` per children's environment
(started lazily, stopped with the evaluator's :class:`aka.eval._workers.Workers`) forks
it with the same isolation. ``spawn`` returns a :class:`WarmProcess`, which quacks like
the ``subprocess.Popen`` it replaces (``pid``, ``stdin``, ``stderr``, ``wait``,
``returncode``). :func:`cache_env` gives candidate processes a compiled-kernel cache per
candidate tree digest. If a zygote cannot start, the caller starts a fresh interpreter
(``spawn`` returns ``None``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

CACHE_ROOT = Path.home() / ".cache" / "aka"
START_TIMEOUT_S = 300.0
CACHE_KEYS = ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR")
"""The variables that name a process's kernel caches (Triton's, torch extensions')."""


def tree_digest(root: Path) -> str:
    """A digest of the files under ``root`` (relative paths and bytes, in sorted order)."""
    h = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(hashlib.blake2b(path.read_bytes(), digest_size=16).digest())
    return h.hexdigest()


def cache_env(module: str, cand: Path | None, *, warm: bool = True) -> dict[str, str]:
    """Kernel cache variables for a warm candidate process, shared by equal candidate trees.

    Keyed by the tree the process imports as its candidate, ``cand``: a process timing the
    baseline alone (:func:`aka.eval._alone.clean_baseline_timing`) gets the baseline
    tree's caches, never those a candidate's process could have written. Other
    processes, and every process when warm workers are off, get nothing.
    """
    if not warm or module != "aka.eval._candidate" or cand is None or not cand.is_dir():
        return {}
    return tree_caches(cand)


def private_caches(tree: Path, to: Path) -> dict[str, str]:
    """A copy of ``tree``'s kernel caches (:func:`tree_caches`) under ``to``: a process
    given it starts from what that code compiled, and what it writes reaches no other."""
    out = {}
    for key, shared in tree_caches(tree).items():
        mine = to / Path(shared).name
        if Path(shared).is_dir():
            shutil.copytree(shared, mine, symlinks=True, dirs_exist_ok=True)
        mine.mkdir(parents=True, exist_ok=True)
        out[key] = str(mine)
    return out


def tree_caches(tree: Path) -> dict[str, str]:
    """The kernel cache variables of the code in ``tree``: folders of its own digest, so
    only processes running exactly that code share what they compiled (or autotuned)."""
    base = CACHE_ROOT / "kernels" / tree_digest(tree)
    return dict(zip(CACHE_KEYS, (str(base / "triton"), str(base / "torch")), strict=True))


class WarmProcess:
    """A forked evaluation process, seen from the evaluator (a ``Popen`` stand-in)."""

    def __init__(self, pid: int, status: socket.socket, stdin: IO[bytes], stderr: IO[bytes]):
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = stdin
        self.stderr = stderr
        self._status = status

    # Two threads may ask at once (a spare's liveness checked by the refill while the
    # evaluator stops it): the zygote sends one exit message, the thread that reads it
    # sets the status before it closes the socket, and the other one, finding the socket
    # closed under it or its wait run out, answers with that status.
    def poll(self) -> int | None:
        """The exit status if the zygote has reported one, else ``None`` (no waiting)."""
        if self.returncode is None:
            try:
                self._status.setblocking(False)
                try:
                    msg = self._status.recv(4096)
                except BlockingIOError:
                    return None
                finally:
                    self._status.setblocking(True)
            except OSError:
                return self.returncode  # read and closed by another thread
            self._exited(msg)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the zygote to report the exit; ``TimeoutExpired`` as ``Popen.wait``."""
        if self.returncode is not None:
            return self.returncode
        try:
            self._status.settimeout(timeout)
            msg = self._status.recv(4096)
        except TimeoutError:
            if self.returncode is not None:
                return self.returncode
            raise subprocess.TimeoutExpired("warm evaluation process", timeout or 0) from None
        except OSError:
            if self.returncode is not None:
                return self.returncode
            raise
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
    return json.dumps({k: v for k, v in sorted(env.items()) if k not in CACHE_KEYS})


class Zygotes:
    """One zygote per children's environment (cache variables aside), started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._zygotes: dict[str, _Zygote] = {}

    def for_env(self, env: dict[str, str]) -> _Zygote:
        """The zygote for this environment (started on first use)."""
        key = _key(env)
        with self._lock:
            if key not in self._zygotes:
                self._zygotes[key] = _Zygote({k: v for k, v in env.items() if k not in CACHE_KEYS})
            return self._zygotes[key]

    def status(self, env: dict[str, str]) -> dict[str, Any]:
        """The zygote's pid, whether it initialized CUDA, and the modules it holds."""
        return self.for_env(env).status()

    def spawn(self, module: str, argv: list[str], *, cwd: Path, env: dict[str, str],
              result_fd: int) -> WarmProcess | None:  # fmt: skip
        """Fork ``module`` from the zygote for ``env``; ``None`` if no zygote can start.

        ``result_fd`` (the write end of the result pipe) is passed to the child under the
        same number, so ``argv`` naming it stays valid; the caller closes its copy.
        """
        try:
            zygote = self.for_env(env)
        except OSError as exc:
            print(f"aka: warm evaluation workers unavailable ({exc}); starting fresh",
                  file=sys.stderr)  # fmt: skip
            return None
        in_r, in_w = os.pipe()
        err_r, err_w = os.pipe()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        head = {"module": module, "argv": argv, "env": env, "cwd": str(cwd),
                "result_fd": result_fd}  # fmt: skip
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

    def close(self) -> None:
        """Stop every zygote (their children, spares included, are killed with them)."""
        with self._lock:
            items = list(self._zygotes.values())
            self._zygotes.clear()
        for zygote in items:
            zygote.close()
