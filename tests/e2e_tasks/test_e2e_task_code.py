"""Forbidden operators that the e2e tasks' own model code calls, on the candidate's behalf.

An e2e task's model file (``llama.py``, not editable) calls operators the task forbids
the kernel (decode_attention's model runs matmuls around the attention), so a call from
task code is not charged outright. The same file keeps a torch reference of every kernel
(``torch_rms_norm``), so a candidate that hands that over as its kernel, calls it, or
labels its own code with the model file's name must still be charged: task code counts
only where the baseline, run alone, makes the same call by the same path
(:mod:`aka.eval._sites`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from e2e_helpers import E2E

from aka.config import TimingSettings
from aka.eval import EvalRequest, _alone, evaluate
from aka.events import REGISTRY, Scored
from aka.tasks import load_task
from aka_ledger import Ledger

# The candidate's own copy of the model module, as model.py loaded it beside kernel.py.
_FIND_MODEL = """
import os
import sys

import torch

_here = os.path.dirname(os.path.abspath(__file__))
_model = next(m for k, m in list(sys.modules.items()) if k.startswith("_aka_e2e_llama")
              and os.path.dirname(getattr(m, "__file__", "") or "") == _here)
"""
HANDED_OVER = _FIND_MODEL + "rms_norm = _model.torch_rms_norm\n"
CALLED = (
    _FIND_MODEL
    + """
def rms_norm(x, weight):
    return _model.torch_rms_norm(x, weight)
"""
)
RELABELLED = """
import os

import torch


def _norm(x, weight):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight).to(x.dtype)


_here = os.path.dirname(os.path.abspath(__file__))
_norm.__code__ = _norm.__code__.replace(co_filename=os.path.join(_here, "llama.py"))
rms_norm = _norm
"""

# decode_attention's model runs its MLP's matmuls (``_mlp``) in every decode step, so those
# calls are the baseline's own; here the attention reaches them through an adapter whose
# code claims to be generated code (skipped like a library's), with no frame of kernel.py
# on the stack while they run.
THROUGH_THE_MLP = (
    _FIND_MODEL
    + """

class _Through:
    @staticmethod
    def rms_norm(x, norm):
        return x

    @staticmethod
    def silu_and_mul(scores):
        return scores


def _attention(q, k, v, k_cache, v_cache):
    return _model._mlp(_Through, q, None, k_cache.transpose(-1, -2), v_cache)


_attention.__code__ = _attention.__code__.replace(co_filename="<frozen attention>")
decode_attention = _attention
"""
)

# The starting kernel, right and honest, and a replacement of the model's prefill step
# (the model file is not editable) that still calls the original: every output right.
PATCHED_MODEL = """

_original_prefill = _model.prefill


def _prefill(*args, **kwargs):
    return _original_prefill(*args, **kwargs)


_model.prefill = _prefill
"""

# The starting kernel again, wrapped: its first call rebinds the entry file's ``OPS`` (a
# plain assignment, not a definition) to a copy, which a later call could have filled
# with kernels of its choosing for the model's other layers.
REBOUND_OPS = """

import copy

_honest = rms_norm


def rms_norm(x, weight):
    entry = next(m for m in list(sys.modules.values())
                 if os.path.basename(getattr(m, "__file__", "") or "") == "model.py"
                 and os.path.dirname(m.__file__) == _here)
    if not getattr(entry.OPS, "_copied", False):
        entry.OPS = copy.copy(entry.OPS)
        object.__setattr__(entry.OPS, "_copied", True)
    return _honest(x, weight)
"""


def _score(tmp: Path, name: str, kernel: str | None = None) -> Scored:
    """One evaluation of ``kernel`` (default: the starting one) on the CPU shapes."""
    ledger = Ledger.open(tmp / "ledger", registry=REGISTRY, create=True)
    task = load_task(E2E / name, root=E2E.parents[1])
    with tempfile.TemporaryDirectory(prefix="aka-e2e-") as folder:
        path = Path(folder) / "kernel.py"
        path.write_text(kernel or (task.path / "source" / "kernel.py").read_text())
        candidate = ledger.cas.snapshot(Path(folder), paths=["kernel.py"])
    req = EvalRequest(
        task=task, task_tree=ledger.cas.snapshot(task.path), candidate=candidate,
        harness="b3:" + "0" * 64, device="cpu", policy="agentkernelarena",
        timing=TimingSettings(max_time_s=0.05, min_samples=3), time=False,
    )  # fmt: skip
    return evaluate(ledger, "e2e-task-code", None, req)


def _through_task_code(s: Scored) -> list[str]:
    return [e for e in s.evidence if e.startswith("forbidden_api") and "task's code" in e]


@pytest.mark.parametrize("kernel", [HANDED_OVER, RELABELLED], ids=["handed_over", "relabelled"])
def test_the_model_file_s_reference_run_for_the_candidate_is_charged(
    tmp_path: Path, kernel: str
) -> None:
    s = _score(tmp_path, "prefill_rmsnorm", kernel)
    assert not s.correct and "forbidden_api" in s.hack_flags, s.evidence
    found = _through_task_code(s)
    assert found and any("aten::rsqrt" in e and "llama.py" in e for e in found), s.evidence
    assert all("never makes" in e for e in found)


def test_the_model_s_reference_called_from_the_kernel_is_the_candidate_s(tmp_path: Path) -> None:
    s = _score(tmp_path, "prefill_rmsnorm", CALLED)
    assert "forbidden_api" in s.hack_flags
    assert "forbidden_api: the candidate ran aten::rsqrt" in s.evidence, s.evidence


def test_the_model_s_own_forbidden_calls_stay_the_task_s(tmp_path: Path) -> None:
    """decode_attention forbids matmul, and its model's projections are matmuls."""
    s = _score(tmp_path, "decode_attention")
    assert s.correct and not s.hack_flags, s.evidence


def test_without_the_baseline_s_own_calls_every_call_of_task_code_is_charged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_alone, "baseline_alone", lambda *a, **k: None)
    s = _score(tmp_path, "decode_attention")
    assert not s.correct and s.hack_flags == ["forbidden_api"]
    assert all("could not be run alone" in e for e in _through_task_code(s)), s.evidence


def test_the_model_s_own_calls_reached_from_elsewhere_are_the_candidate_s(tmp_path: Path) -> None:
    """The same operator at the same place in the model's code, reached by another path."""
    s = _score(tmp_path, "decode_attention", THROUGH_THE_MLP)
    found = _through_task_code(s)
    assert any("aten::matmul" in e and "(_mlp)" in e for e in found), s.evidence


def test_a_candidate_that_replaces_the_model_s_code_is_flagged(tmp_path: Path) -> None:
    """Assigning to the model module's names needs no audited operation; its score would
    measure a model that is not the task's (:mod:`aka.eval._taskcode`)."""
    source = (E2E / "prefill_rmsnorm" / "source" / "kernel.py").read_text()
    s = _score(tmp_path, "prefill_rmsnorm", source + _FIND_MODEL + PATCHED_MODEL)
    assert not s.correct and "task_code_patched" in s.hack_flags, s.evidence
    assert any("llama.py:prefill replaced" in e for e in s.evidence), s.evidence


def test_a_task_module_s_names_rebound_during_the_calls_are_flagged(tmp_path: Path) -> None:
    """A plain assignment has no definition to compare with: what it held once
    everything had loaded is what it must still hold after the plan."""
    source = (E2E / "prefill_rmsnorm" / "source" / "kernel.py").read_text()
    s = _score(tmp_path, "prefill_rmsnorm", source + _FIND_MODEL + REBOUND_OPS)
    assert not s.correct and "task_code_patched" in s.hack_flags, s.evidence
    assert any("model.py:OPS" in e for e in s.evidence), s.evidence
