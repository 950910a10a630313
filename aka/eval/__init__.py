"""The evaluator: the agent never grades itself.

Public surface: :func:`evaluate` (record an evaluation of a candidate tree in the ledger),
:class:`EvalRequest`, :func:`harness_paths` (what code judges, for its digest).
"""

from aka.eval._evaluate import EvalRequest, build_eval_dir, evaluate, harness_paths, run_child
from aka.eval._static import Finding, forbidden_uses

__all__ = [
    "EvalRequest",
    "Finding",
    "build_eval_dir",
    "evaluate",
    "forbidden_uses",
    "harness_paths",
    "run_child",
]
