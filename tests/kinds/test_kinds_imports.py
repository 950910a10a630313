"""The task kinds never import the recording evaluator, so the two cannot form a cycle.

``aka.repo_tasks`` and ``aka.eval._evaluate`` used to import each other (one of them
inside a function); the kinds now sit between the recorder and the process layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import aka.kinds

KINDS = Path(aka.kinds.__file__).parent
RECORDER = {"aka.eval._evaluate", "aka.validate", "aka.api", "aka.orchestrator", "aka.heldout"}


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (``from aka.eval import evaluate`` counts
    as ``aka.eval.evaluate``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_no_kind_imports_the_recorder_or_its_callers() -> None:
    offenders = {
        f"{path.name}: {name}"
        for path in sorted(KINDS.glob("*.py"))
        for name in _imports(path)
        if name in RECORDER or name == "aka.eval.evaluate"
    }
    assert not offenders


def test_the_recorder_judges_through_the_kinds() -> None:
    evaluate = KINDS.parent / "eval" / "_evaluate.py"
    names = _imports(evaluate)
    assert "aka.kinds.kind_of" in names
    assert not any(n.startswith(("aka.repo_tasks", "aka.command_tasks")) for n in names)
