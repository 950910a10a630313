"""Candidate sources parsed on several threads at once (the evaluator's in-flight batches).

Python 3.11's AST constructor can fail with ``SystemError: AST constructor recursion
depth mismatch`` when two threads build trees at once and one is switched out mid-build
(CPython gh-106905). It failed the red-team corpus, whose candidates are evaluated on
threads, once on this project's CI machine. :func:`aka.pyast.parse` lets one thread
build a tree at a time, and the evaluator's source scans go through it.
"""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from aka import pyast
from aka.eval import _static

SOURCE = (Path(__file__).resolve().parents[2] / "aka" / "eval" / "_static.py").read_text()


def test_trees_are_built_one_thread_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    inside, most = [0], [0]
    lock = threading.Lock()
    real = ast.parse

    def slow_parse(*args: Any, **kwargs: Any) -> ast.Module:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)  # a thread switch in the middle of building the tree
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(pyast.ast, "parse", slow_parse)
    errors: list[BaseException] = []

    def scan() -> None:
        for _ in range(5):
            try:
                _static.hack_findings("kernel.py", SOURCE)  # what each evaluation runs
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=scan) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and most[0] == 1
