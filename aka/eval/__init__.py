"""The evaluator: the agent never grades itself.

Public surface: :func:`evaluate` (record an evaluation of a candidate tree in the ledger),
:class:`EvalRequest`, :func:`harness_paths` (what code judges, for its digest),
:func:`forbidden_uses` and :func:`hack_findings` (static checks) with :class:`Finding`.

The names are loaded lazily: the evaluation processes import ``aka.eval._child`` and
``aka.eval._reference``, which must start without the ledger, pydantic or any thread
(a new user namespace needs a single-threaded process).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aka.eval._evaluate import evaluate, harness_paths
    from aka.eval._pipeline import run_child
    from aka.eval._request import EvalRequest
    from aka.eval._static import Finding, forbidden_uses, hack_findings

__all__ = [
    "EvalRequest",
    "Finding",
    "evaluate",
    "forbidden_uses",
    "hack_findings",
    "harness_paths",
    "run_child",
]

_WHERE = {
    "EvalRequest": "_request",
    "evaluate": "_evaluate",
    "harness_paths": "_evaluate",
    "run_child": "_pipeline",
    "Finding": "_static",
    "forbidden_uses": "_static",
    "hack_findings": "_static",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'aka.eval' has no attribute {name!r}")
    return getattr(importlib.import_module(f"aka.eval.{_WHERE[name]}"), name)
