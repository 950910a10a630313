"""The evaluator: the agent never grades itself.

Public surface: :func:`evaluate` (record an evaluation of a candidate tree in the ledger),
:class:`EvalRequest`, :func:`harness_paths` (what code judges, for its digest),
:func:`forbidden_uses` and :func:`hack_findings` (static checks) with :class:`Finding`;
for the benchmarks, trainers and the task checks, :func:`run_job` (the pipeline on one
:class:`Job`, giving a :class:`Verdict`), :func:`child_env`, :func:`load_file_module`,
the process layer: :class:`Workers` built from :class:`Switches`, the timing :class:`Gate`, the host gate's
folder variable :data:`HOST_GATE_ENV` and :func:`recover_host_gate`, the GPU memory probe
:func:`gpu_free_fraction` with its bar :data:`ADMIT_FREE` and :func:`memory_reader`,
:func:`configure_workers`, :func:`current_workers` and :func:`workers_for_run`;
:func:`tree_caches` (the kernel caches of one tree of code, by its digest); and
:func:`hide` (a private mount namespace hiding paths; the agents' sandbox uses it too).

The names are loaded lazily: the evaluation processes import ``aka.eval._candidate`` and
``aka.eval._checker``, which must start without the ledger, pydantic or any thread
(a new user namespace needs a single-threaded process).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aka.eval._candidate import load_file_module
    from aka.eval._contain import hide
    from aka.eval._evaluate import evaluate, harness_paths
    from aka.eval._gate import Gate
    from aka.eval._heldout import (
        excuse_variants,
        heldout_job,
        keep_excused,
        missed_variants,
        unexcused_shapes,
        with_heldout,
    )
    from aka.eval._hostgate import recover as recover_host_gate
    from aka.eval._memory import ADMIT_FREE, gpu_free_fraction, memory_reader
    from aka.eval._pipeline import Job, Verdict, child_env, run_job
    from aka.eval._request import EvalRequest
    from aka.eval._static import Finding, forbidden_uses, hack_findings
    from aka.eval._switches import HOST_GATE_ENV, Switches
    from aka.eval._warm import tree_caches
    from aka.eval._workers import Workers
    from aka.eval._workers import configure as configure_workers
    from aka.eval._workers import current as current_workers
    from aka.eval._workers import for_run as workers_for_run

__all__ = [
    "ADMIT_FREE",
    "HOST_GATE_ENV",
    "EvalRequest",
    "Finding",
    "Gate",
    "Job",
    "Switches",
    "Verdict",
    "Workers",
    "child_env",
    "configure_workers",
    "current_workers",
    "evaluate",
    "excuse_variants",
    "forbidden_uses",
    "gpu_free_fraction",
    "hack_findings",
    "harness_paths",
    "heldout_job",
    "hide",
    "keep_excused",
    "load_file_module",
    "memory_reader",
    "missed_variants",
    "recover_host_gate",
    "run_job",
    "tree_caches",
    "unexcused_shapes",
    "with_heldout",
    "workers_for_run",
]

_WHERE = {
    "EvalRequest": "_request",
    "evaluate": "_evaluate",
    "harness_paths": "_evaluate",
    "Finding": "_static",
    "forbidden_uses": "_static",
    "hack_findings": "_static",
    "Job": "_pipeline",
    "Verdict": "_pipeline",
    "child_env": "_pipeline",
    "run_job": "_pipeline",
    "heldout_job": "_heldout",
    "missed_variants": "_heldout",
    "excuse_variants": "_heldout",
    "keep_excused": "_heldout",
    "unexcused_shapes": "_heldout",
    "with_heldout": "_heldout",
    "load_file_module": "_candidate",
    "Switches": "_switches",
    "Gate": "_gate",
    "HOST_GATE_ENV": "_switches",
    "recover_host_gate": "_hostgate:recover",
    "Workers": "_workers",
    "configure_workers": "_workers:configure",
    "current_workers": "_workers:current",
    "workers_for_run": "_workers:for_run",
    "hide": "_contain",
    "ADMIT_FREE": "_memory",
    "gpu_free_fraction": "_memory",
    "memory_reader": "_memory",
    "tree_caches": "_warm",
}
"""Public name -> ``module`` (same name there) or ``module:name``."""


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'aka.eval' has no attribute {name!r}")
    module, _, attr = _WHERE[name].partition(":")
    return getattr(importlib.import_module(f"aka.eval.{module}"), attr or name)
