"""Run an aka module in a child Python and read back the JSON it reports.

Work that may exhaust memory, hang or crash the interpreter (validating a task, reading
a KernelBench problem) runs as ``python -m MODULE`` with its request as JSON on stdin,
so whatever happens there, the parent gets a result. The child reads its request with
:func:`read_request` (which caps its data segment and sends its stdout to stderr, so the
code it runs cannot print a result line) and writes each result with :func:`report`
as one line, a mark followed by JSON, on the real stdout. The parent's
:func:`run_module` returns every marked document in order, with the exit status and
stderr to explain a child that reported nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ChildResult:
    """What a child module reported.

    Attributes:
        docs: every JSON document the child wrote after the mark, in order.
        stderr: the child's stderr ("" when it was stopped at the time limit).
        code: its exit status (negative: the signal that killed it); None when it was
            stopped at the time limit.
    """

    docs: list[dict[str, Any]]
    stderr: str
    code: int | None

    def last_error_line(self) -> str:
        """The last line of stderr, or the exit status when stderr is empty."""
        return (self.stderr.strip().splitlines() or [f"exit status {self.code}"])[-1]


def run_module(
    module: str,
    request: Mapping[str, Any],
    *,
    mark: str,
    timeout_s: float,
    memory_bytes: int | None = None,
    env: Mapping[str, str] | None = None,
) -> ChildResult:
    """Run ``python -m module`` with ``request`` on stdin; never raises for the child's fate.

    Args:
        module: the child module; its ``main`` uses :func:`read_request` and :func:`report`.
        request: the JSON request.
        mark: the prefix of the child's result lines.
        timeout_s: the child is stopped after this long.
        memory_bytes: the child's data segment cap (``RLIMIT_DATA``); None: no cap.
        env: variables set for the child on top of this process's environment.
    """
    doc = {**request, "memory_bytes": memory_bytes}
    try:
        done = subprocess.run(
            [sys.executable, "-m", module],
            input=json.dumps(doc), capture_output=True, text=True, timeout=timeout_s,
            check=False, env={**os.environ, **env} if env else None,
        )  # fmt: skip
        stdout, stderr, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        stderr, code = "", None
    docs = [json.loads(line[len(mark) :]) for line in stdout.splitlines() if line.startswith(mark)]
    return ChildResult(docs=docs, stderr=stderr, code=code)


def read_request() -> dict[str, Any]:
    """Child side: the request from stdin, the data segment capped, stdout sent to stderr."""
    import resource

    request: dict[str, Any] = json.loads(sys.stdin.read())
    cap = request.pop("memory_bytes", None)
    if cap:
        resource.setrlimit(resource.RLIMIT_DATA, (int(cap), int(cap)))
    sys.stdout = sys.stderr  # what the child's code prints cannot corrupt a result line
    return request


def report(mark: str, doc: Mapping[str, Any]) -> None:
    """Child side: write ``doc`` as one marked line on the real stdout."""
    out = sys.__stdout__
    assert out is not None, "a child module runs with a stdout"
    out.write(mark + json.dumps(doc) + "\n")
    out.flush()
