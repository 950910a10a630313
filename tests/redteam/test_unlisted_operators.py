"""Bundled Triton tasks let their kernels call the library for plumbing only.

Each candidate computes the answer with operators its task's forbidden list does not name,
and a Triton copy moves it into the output; against the list alone each scored correct."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

CORPUS = REPO / "tests" / "redteam" / "corpus"


@pytest.mark.parametrize(
    ("task", "candidate", "operator"),
    [
        ("softmax", "s24_unlisted_exp2", "aten::exp2"),
        ("rms_norm", "s25_unlisted_reduction", "aten::exp"),
        ("argmax", "s26_unlisted_cummax", "aten::cummax"),
    ],
)
def test_an_operator_no_list_names_is_charged(
    cli: Callable[..., Any], ledger_dir: Path, task: str, candidate: str, operator: str
) -> None:
    res = cli("check", str(CORPUS / f"{candidate}.py"), "--task", f"triton2triton/llm/{task}",
              "--root", str(REPO / "tasks"), "--device", "cpu", "--ledger", str(ledger_dir),
              "--format", "json")  # fmt: skip
    assert res.code == 0, res.err
    verdict = json.loads(res.out)
    assert not verdict["correct"]
    assert "forbidden_api" in verdict["hack_flags"]
    assert f"the candidate ran {operator}," in verdict["error"]


def test_plumbing_admits_what_wrappers_do_and_not_what_computes() -> None:
    from aka.eval._ops import allowed_operators

    allowed = allowed_operators("plumbing", ["torch.div"], ["torch.softmax", "torch.exp"])
    assert {"aten::empty", "aten::copy_", "aten::view", "aten::cat", "aten::div"} <= allowed
    assert not {"aten::exp", "aten::exp2", "aten::_softmax", "aten::cummax"} & allowed
    assert allowed_operators("any", ["torch.div"], []) == set()
    # A name the task both forbids and allows stays forbidden.
    assert "aten::div" not in allowed_operators("plumbing", ["torch.div"], ["torch.div"])
