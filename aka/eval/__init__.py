"""The evaluator: the agent never grades itself.

Public surface: :func:`evaluate` (record an evaluation of a candidate tree in the ledger),
:class:`EvalRequest`, :func:`harness_paths` (what code judges, for its digest),
:func:`forbidden_uses` and :func:`hack_findings` (static checks) with :class:`Finding`,
:func:`hide` (a private mount namespace hiding paths; the agents' sandbox uses it too).

The names are loaded lazily: the evaluation processes import ``aka.eval._child`` and
``aka.eval._reference``, which must start without the ledger, pydantic or any thread
(a new user namespace needs a single-threaded process).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aka.eval._contain import hide
    from aka.eval._evaluate import (
        EvalRequest,
        build_eval_dir,
        evaluate,
        harness_paths,
        run_child,
    )
    from aka.eval._static import Finding, forbidden_uses, hack_findings

__all__ = [
    "EvalRequest",
    "Finding",
    "build_eval_dir",
    "evaluate",
    "forbidden_uses",
    "hack_findings",
    "harness_paths",
    "hide",
    "run_child",
]

_WHERE = {
    "EvalRequest": "_evaluate",
    "build_eval_dir": "_evaluate",
    "evaluate": "_evaluate",
    "harness_paths": "_evaluate",
    "run_child": "_evaluate",
    "Finding": "_static",
    "forbidden_uses": "_static",
    "hack_findings": "_static",
    "hide": "_contain",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'aka.eval' has no attribute {name!r}")
    return getattr(importlib.import_module(f"aka.eval.{_WHERE[name]}"), name)
