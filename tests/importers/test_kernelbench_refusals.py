"""KernelBench files that are no problem, or that cannot run where aka reads them, are refused
naming the file, the reason and the fix: a single file as an error, in a folder one line each."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aka.importers import read_problem

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_missing_get_inputs_names_file_field_and_fix(tmp_path: Path, cli) -> None:
    bad = FIXTURES / "kernelbench_broken" / "no_get_inputs.py"
    res = cli("tasks", "import", "kernelbench", str(bad), "--root", str(tmp_path))
    assert res.code == 2
    assert str(bad) in res.err and "'get_inputs'" in res.err and "fix:" in res.err
    assert "Traceback" not in res.err


def test_syntax_error_names_the_line(tmp_path: Path) -> None:
    from aka.errors import InputError

    with pytest.raises(InputError, match=r"syntax_error\.txt:3"):
        read_problem(FIXTURES / "kernelbench_broken" / "syntax_error.txt")


def test_folder_of_broken_files_imports_nothing(tmp_path: Path, cli) -> None:
    res = cli(
        "tasks",
        "import",
        "kernelbench",
        str(FIXTURES / "kernelbench_broken"),
        "--root",
        str(tmp_path),
    )
    assert res.code == 2 and "nothing was imported" in res.err
    assert "no_get_inputs.py" in res.err


# Level 4's shape: a Hugging Face model named at module level, its config fetched as the
# file is read; here a name no cache holds.
HUB_PROBLEM = """import torch
from transformers import AutoConfig

class Model(torch.nn.Module):
    def __init__(self, model_name, config):
        super().__init__()
        self.proj = torch.nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x):
        return self.proj(x)

model_name = "aka-tests/no-such-model"
config = AutoConfig.from_pretrained(model_name)
batch_size = 4

def get_inputs():
    return [torch.rand(batch_size, config.hidden_size)]

def get_init_inputs():
    return [model_name, config]
"""
MISSING_PACKAGE = """import torch
import aka_tests_no_such_package.ops as ops

class Model(torch.nn.Module):
    def forward(self, x):
        return ops.scale(x)

batch_size = 16

def get_inputs():
    return [torch.rand(batch_size, 8)]

def get_init_inputs():
    return []
"""


def test_problems_that_need_the_network_or_a_package_say_which(tmp_path: Path, cli) -> None:
    """Read offline, a file that fetches its model is refused at once (not after the hub's
    time-outs) with a fix about the local cache; a missing package names the install."""
    pytest.importorskip("transformers")
    folder = tmp_path / "level4"
    folder.mkdir()
    (folder / "1_hub_model.py").write_text(HUB_PROBLEM)
    (folder / "2_missing_package.py").write_text(MISSING_PACKAGE)
    res = cli("tasks", "import", "kernelbench", str(folder), "--root", str(tmp_path / "t"))
    assert res.code == 2 and "0 imported, 0 imported GPU-only, 2 refused" in res.out
    hub, pkg = sorted(re.split(r"(?m)^refused ", res.err)[1:])  # a reason may span lines
    assert "1_hub_model.py" in hub and "the local cache" in hub and "huggingface-cli" in hub
    assert "2_missing_package.py" in pkg
    assert "pip install aka_tests_no_such_package" in pkg
