"""Self-evaluation: an agent scores its own work-in-progress with the real evaluator.

While an attempt's agent runs, the orchestrator serves a Unix socket (its path is in the
agent's ``AKA_EVAL_SOCKET``; it reveals nothing about the ledger). ``aka eval`` in the
workspace, or any agent calling :func:`request_eval`, asks it to evaluate the
workspace's current editable files. The orchestrator snapshots them itself and records
the evaluation as ``purpose="self"`` events with a turn number: turn-level data for
multi-turn RL, never the attempt's score, which only the final evaluation writes.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aka import events as ev
from aka.errors import AkaError

SOCKET_ENV = "AKA_EVAL_SOCKET"
MAX_REQUEST = 1 << 16


def summary(s: ev.Scored) -> dict[str, Any]:
    """What a self-evaluation tells the agent."""
    return {
        "compiled": s.compiled,
        "correct": s.correct,
        "speedup": s.speedup,
        "score": s.score,
        "error": s.error,
        "hack_flags": s.hack_flags,
        "eval_id": s.eval_id,
    }


EvalFn = Callable[[int], ev.Scored]


@contextmanager
def serve(evaluate_turn: EvalFn) -> Iterator[str]:
    """Serve self-evaluations for the duration of the block; yields the socket path.

    ``evaluate_turn(turn)`` snapshots the workspace and runs the evaluator. Requests are
    handled one at a time (the GPU is measured by one evaluation at a time).
    """
    folder = tempfile.mkdtemp(prefix="aka-sock-")
    path = os.path.join(folder, "eval.sock")
    turns = iter(range(1, 1 << 30))
    lock = threading.Lock()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            self.rfile.readline(MAX_REQUEST)
            with lock:
                turn = next(turns)
                try:
                    reply = summary(evaluate_turn(turn))
                except Exception as exc:  # reported to the agent, never raised in the server
                    reply = {"error": f"evaluation failed: {type(exc).__name__}: {exc}"}
            reply["turn"] = turn
            self.wfile.write(json.dumps(reply).encode() + b"\n")

    server = socketserver.ThreadingUnixStreamServer(path, Handler)
    thread = threading.Thread(target=server.serve_forever, name="aka-selfeval", daemon=True)
    thread.start()
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(folder, ignore_errors=True)


def request_eval(socket_path: str | None = None, *, timeout: float = 3600.0) -> dict[str, Any]:
    """Ask the orchestrator to evaluate the current workspace; returns the summary.

    Raises:
        AkaError: no self-evaluation socket (not running inside an attempt).
    """
    path = socket_path or os.environ.get(SOCKET_ENV)
    if not path or not Path(path).exists():
        raise AkaError(
            f"no self-evaluation service (${SOCKET_ENV} is unset or stale)",
            fix="`aka eval` works inside an attempt's workspace while aka runs the agent",
        )
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(b'{"op": "eval"}\n')
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    result: dict[str, Any] = json.loads(data)
    return result
