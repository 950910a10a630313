"""Forbidden operators that the task's own code called inside a candidate call.

Some tasks wrap the kernel in code of their own (a model whose RMSNorm is the candidate's
kernel), and that code may call operators the candidate must not (the model's matmuls in a
task about attention). The sealed core charges an operator to the candidate unless a task
file called it; a call from a task file comes back as a *site*: the operator, the file, the
function, the instruction, and a digest of the path that reached it (every frame out to the
outermost one of a task file, by bytecode and instruction).

A site alone proves nothing: the candidate can run the task's code on its own behalf (call
a reference helper the model file keeps, hand one over as its kernel, or label its own
code with a task file's name, or reach the model's own calls through code of its own). So
a site is the candidate's unless the task's baseline makes the same call, by the same path,
when it runs where no candidate code is: the evaluator runs the
baseline's checked calls once in a process of its own, keeps the sites it saw (per task,
for the evaluator's lifetime), and charges every other site to the candidate. The
comparison happens here, in the parent, where candidate code never runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

__all__ = ["Site", "charged", "parse", "split"]


class Site(NamedTuple):
    """One call of a forbidden operator by task code, its file relative to the tree."""

    op: str
    file: str
    line: int
    function: str
    instruction: int
    path: str

    def where(self) -> str:
        """The call as a reader finds it: file, function, first line."""
        return f"{self.file}:{self.line} ({self.function})"


def split(ops: Iterable[str]) -> tuple[list[str], list[str]]:
    """The core's ``ops``: plain operator names (the candidate's) and sites (task code's)."""
    plain: list[str] = []
    sites: list[str] = []
    for op in ops:
        (sites if "@" in op else plain).append(op)
    return plain, sites


def parse(raw: str, trees: Iterable[Path], task: Path | None = None) -> Site | None:
    """A site from the core's text, its file relative to the first of ``trees`` holding it,
    or to the evaluation's ``task`` folder (the reference, whose ``make_inputs`` runs in
    the candidate's process), as ``task/<name>``; a site elsewhere keeps its whole path, so
    it matches no baseline site. ``None`` for text that is not a site."""
    op, _, rest = raw.partition("@")
    parts = rest.rsplit(":", 4)
    if not op or len(parts) != 5:
        return None
    file, line, function, instruction, path = parts
    named = [(tree, "") for tree in trees]
    if task is not None:  # as given and resolved, like ``trees``
        named += [(tree, "task/") for tree in dict.fromkeys([task, task.resolve()])]
    for tree, prefix in named:
        try:
            file = prefix + Path(file).relative_to(tree).as_posix()
            break
        except ValueError:
            continue
    try:
        return Site(op, file, int(line), function, int(instruction), path)
    except ValueError:
        return None


def trees(folder: Path) -> list[Path]:
    """A tree's folder as code objects may name it: as given and resolved."""
    return list(dict.fromkeys([folder, folder.resolve()]))


def charged(raw: Iterable[str], folder: Path, baseline: frozenset[Site] | None) -> list[str]:
    """Evidence for every site in ``raw`` (the candidate's, under ``folder``) that the
    baseline never made; with no baseline sites to judge by, every site is charged."""
    out: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for text in raw:
        site = parse(text, trees(folder), folder.parent / "task")
        if site is None:
            out.append(
                f"the candidate's process reported an unreadable operator site {text[:200]!r}"
            )
            continue
        if baseline is not None and site in baseline:
            continue
        key = (site.op, site.file, site.function)
        if key in seen:
            continue
        seen.add(key)
        why = (
            "a call the task's baseline never makes"
            if baseline is not None
            else "the task's baseline could not be run alone to tell its own calls apart"
        )
        out.append(f"the candidate ran {site.op} through the task's code at {site.where()}: {why}")
    return out[:8]
