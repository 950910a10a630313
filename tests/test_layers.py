"""The import rules of docs/architecture.md, read from the source with ``ast``.

Imports point one way: ``aka_ledger`` <- ``aka`` core <- ``aka_agents``, ``aka_runners``
<- ``aka.cli``, and nothing imports the CLI. A package's ``_private`` modules and names
are its own: another package imports what the package exports. Every import counts,
including those inside functions and under ``TYPE_CHECKING`` (a type-only import still
ties the layers together for a reader and for mypy).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"aka": "aka", "ledger": "aka_ledger", "agents": "aka_agents", "runners": "aka_runners"}
"""Folder -> import name (pyproject.toml, [tool.setuptools] package-dir)."""

ALLOWED = {
    "ledger": {"ledger"},
    "core": {"ledger", "core"},
    "agents": {"ledger", "core", "agents"},
    "runners": {"ledger", "core", "runners"},
    "cli": {"ledger", "core", "agents", "runners", "cli"},
}
"""Layer -> the layers its modules may import."""

RULES = {
    "ledger": "aka_ledger imports nothing of aka, aka_agents or aka_runners",
    "core": "aka core imports only aka_ledger and itself (not aka_agents, aka_runners, aka.cli)",
    "agents": "aka_agents imports only aka_ledger and aka core (not aka_runners, aka.cli)",
    "runners": "aka_runners imports only aka_ledger and aka core (not aka_agents, aka.cli)",
    "cli": "",
}


@dataclass(frozen=True)
class Import:
    """One imported module (and name, for ``from M import N``) at a place in a file."""

    path: str
    line: int
    importer: str
    package: str
    module: str
    name: str | None


def layer(module: str) -> str | None:
    """The layer of a first-party module; None for anything else."""
    top = module.split(".")[0]
    if top == "aka":
        return "cli" if module == "aka.cli" or module.startswith("aka.cli.") else "core"
    return {"aka_ledger": "ledger", "aka_agents": "agents", "aka_runners": "runners"}.get(top)


def packages(root: Path) -> set[str]:
    """Import names of every package (a folder with ``__init__.py``) under ``root``."""
    return {
        ".".join([top, *init.parent.relative_to(root / folder).parts])
        for folder, top in FOLDERS.items()
        for init in (root / folder).rglob("__init__.py")
    }


def imports(root: Path) -> list[Import]:
    """Every first-party import under ``root``'s package folders."""
    out = []
    for folder, top in FOLDERS.items():
        for file in sorted((root / folder).rglob("*.py")):
            rel = file.relative_to(root / folder).with_suffix("")
            parts = [top, *rel.parts]
            is_init = parts[-1] == "__init__"
            if is_init:
                parts.pop()
            importer = ".".join(parts)
            package = importer if is_init else ".".join(parts[:-1])
            for node in ast.walk(ast.parse(file.read_text(), str(file))):
                found: list[tuple[str, str | None]] = []
                if isinstance(node, ast.Import):
                    found = [(a.name, None) for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        up = package.split(".")[: len(package.split(".")) - node.level + 1]
                        base = ".".join([*up, base] if base else up)
                    found = [(base, a.name) for a in node.names]
                for module, name in found:
                    if layer(module) is not None:
                        where = str(file.relative_to(root))
                        out.append(Import(where, node.lineno, importer, package, module, name))
    return out


def _private(imp: Import, pkgs: set[str]) -> tuple[str, str] | None:
    """(package it belongs to, the fix) for a private module or name; None if public.

    A ``_module`` is private to its package, and so is a ``_name`` exported by nothing
    (one defined in a module is private to the module's package: sibling modules share
    helpers, other packages do not).
    """
    parts = imp.module.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_"):
            owner = ".".join(parts[:i])
            return (
                owner,
                f"export it from {owner} (its __init__ and __all__) and import it from there",
            )
    name = imp.name or ""
    if not name.startswith("_") or name.endswith("__"):
        return None
    if imp.module in pkgs:
        owner = imp.module
        return owner, f"export it from {owner} (its __init__ and __all__) and import it from there"
    owner = imp.module.rpartition(".")[0]
    return owner, f"give it a public name in {imp.module} if other packages need it"


def problems(root: Path) -> list[str]:
    """Every broken rule, as ``file:line: what; rule`` lines."""
    out = []
    pkgs = packages(root)
    for imp in imports(root):
        what = imp.module + (f".{imp.name}" if imp.name else "")
        src, dst = layer(imp.importer), layer(imp.module)
        assert src is not None and dst is not None
        if dst not in ALLOWED[src]:
            out.append(
                f"{imp.path}:{imp.line}: {imp.importer} imports {what}; layer rule: {RULES[src]}"
                " (docs/architecture.md)"
            )
        private = _private(imp, pkgs)
        if private is not None and not (imp.package + ".").startswith(private[0] + "."):
            out.append(
                f"{imp.path}:{imp.line}: {imp.importer} imports {what}, private to "
                f"{private[0]}; private rule: {private[1]}"
            )
    return out


def test_the_source_follows_the_import_rules() -> None:
    found = problems(REPO)
    assert not found, "\n".join(found)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_each_kind_of_broken_import_is_named_with_its_file_line_and_rule(tmp_path: Path) -> None:
    """A tree with one of each mistake, written the ways real code writes imports."""
    _write(
        tmp_path,
        {
            "ledger/__init__.py": "",
            "ledger/_cas.py": (
                '"""Content store."""\nfrom typing import TYPE_CHECKING\n\n'
                "if TYPE_CHECKING:\n    from aka.events import REGISTRY\n"
            ),
            "ledger/_ok.py": "from ._cas import put\nfrom aka_ledger._cas import put as p2\n",
            "aka/__init__.py": "",
            "aka/eval/__init__.py": "",
            "aka/eval/_pipeline.py": "from aka.eval import _detect\nfrom .. import _arm_check\n",
            "aka/runlock.py": "from aka.claims import _encode\n",
            "aka/claims.py": "",
            "aka/orchestrator.py": (
                "import os\n\n\ndef run():\n    import aka_runners\n    return aka_runners\n"
            ),
            "aka/task_checks.py": "from aka.eval._candidate import load_file_module\n",
            "aka/runkeys.py": "import aka_ledger._authority as auth\n",
            "aka/cli/__init__.py": "from aka_runners._schedule import simulate\n",
            "aka/cli/_run.py": "from aka_agents import AgentCheck\nfrom aka.cli._common import x\n",
            "agents/__init__.py": "from aka.cli import main\n",
            "agents/_noop.py": "from aka.agent import _REGISTRY\nfrom aka import __version__\n",
            "runners/__init__.py": "from aka_agents import get\n",
        },
    )
    found = problems(tmp_path)
    assert sorted(found) == sorted(
        [
            "agents/__init__.py:1: aka_agents imports aka.cli.main; layer rule: "
            + RULES["agents"]
            + " (docs/architecture.md)",
            "agents/_noop.py:1: aka_agents._noop imports aka.agent._REGISTRY, private to "
            "aka; private rule: give it a public name in aka.agent if other packages need it",
            "aka/cli/__init__.py:1: aka.cli imports aka_runners._schedule.simulate, private to "
            "aka_runners; private rule: export it from aka_runners (its __init__ and __all__) "
            "and import it from there",
            "aka/orchestrator.py:5: aka.orchestrator imports aka_runners; layer rule: "
            + RULES["core"]
            + " (docs/architecture.md)",
            "aka/runkeys.py:1: aka.runkeys imports aka_ledger._authority, private to aka_ledger;"
            " private rule: export it from aka_ledger (its __init__ and __all__) and import it"
            " from there",
            "aka/task_checks.py:1: aka.task_checks imports aka.eval._candidate.load_file_module, "
            "private to aka.eval; private rule: export it from aka.eval (its __init__ and "
            "__all__) and import it from there",
            "ledger/_cas.py:5: aka_ledger._cas imports aka.events.REGISTRY; layer rule: "
            + RULES["ledger"]
            + " (docs/architecture.md)",
            "runners/__init__.py:1: aka_runners imports aka_agents.get; layer rule: "
            + RULES["runners"]
            + " (docs/architecture.md)",
        ]
    )
