"""The writer of an imported AgentKernelArena task: the folder copied, task.yaml beside it.

The folder is copied whole (links followed; past runs' ``build/`` and ``__pycache__``
left out), aka's timing helper is put where the scripts expect one
(:mod:`aka.importers._arena_timing`), and ``task.yaml`` gets a ``commands`` block, so the
task's own scripts compile, check and time candidates (:mod:`aka.kinds._command`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from aka.errors import InputError
from aka.importers._arena_config import ArenaConfig
from aka.importers._arena_fp8 import nvidia_fp8
from aka.importers._arena_support import _backend, skip_reason
from aka.importers._arena_timing import (
    BEGIN,
    PYTEST_PERF,
    PYTEST_REPORT,
    inject_helper,
    place_pytest_helper,
    times_with_helper,
)
from aka.importers._common import origin, write_spec


def _timing(dest: Path) -> tuple[str, bool]:
    """Put aka's helper where the task's scripts expect one; what was done, and whether
    the scripts time through it (so it may ask for the timing gate itself)."""
    changed = inject_helper(dest)
    pytest_perf = place_pytest_helper(dest)
    through = times_with_helper(dest)
    done = []
    if changed:
        done.append(f"timing helper placed in {', '.join(changed)}")
    if pytest_perf:
        done.append(f"aka's {PYTEST_PERF} written in place of upstream's generated stub")
    if not done:
        done.append(f"no {BEGIN} markers and no {PYTEST_PERF}: the scripts keep their own timing")
    elif not through:
        done[-1] += " (the runner times with its own events)"
    return "; ".join(done), through


REPORTS = "build"
"""The runner's report folder at the top of a task folder: outputs of past runs, not sources."""


def _skipped(folder: Path) -> Callable[[str, list[str]], set[str]]:
    """What the copy leaves out: ``__pycache__`` anywhere and the top-level ``build/`` (a
    package of the sources named build, ``source/build/consts.py``, is kept)."""

    def ignore(where: str, names: list[str]) -> set[str]:
        top = Path(where) == folder
        return {n for n in names if n == "__pycache__" or (top and n == REPORTS)}

    return ignore


def _links(folder: Path) -> list[Path]:
    """The links in ``folder`` that the copy meets (it follows them)."""
    skip = _skipped(folder)
    found: list[Path] = []
    for where, dirs, files in os.walk(folder):
        left_out = skip(where, [*dirs, *files])
        dirs[:] = [d for d in dirs if d not in left_out]
        found += [Path(where) / n for n in [*dirs, *files] if n not in left_out]
    return sorted(p for p in found if p.is_symlink())


def dangling_links(folder: Path) -> list[str]:
    """Links in ``folder`` (where the copy goes) whose target is gone, relative to it."""
    return [p.relative_to(folder).as_posix() for p in _links(folder) if not p.exists()]


def outside_links(folder: Path) -> list[str]:
    """``LINK -> TARGET`` for each link in ``folder`` that leads out of it: the copy holds
    what it pointed to when imported, which the user should know came from elsewhere
    (a shared helper, or a file never meant for the task)."""
    inside = folder.resolve()
    return [
        f"{p.relative_to(folder).as_posix()} -> {p.resolve()}"
        for p in _links(folder)
        if p.exists() and not p.resolve().is_relative_to(inside)
    ]


def _copy(folder: Path, dest: Path) -> None:
    """Copy the task folder whole (links followed); a copy that fails leaves no folder
    behind, which the next import would take for a task already imported.

    Raises:
        InputError: the copy failed (a file that cannot be read).
    """
    try:
        shutil.copytree(folder, dest, dirs_exist_ok=True, ignore=_skipped(folder))
    except (shutil.Error, OSError) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise InputError(
            f"copying the folder failed: {str(exc)[:300]}",
            where=str(folder),
            fix="make every file of the task folder readable, then import again",
        ) from None


def write_task(
    folder: Path, cfg: ArenaConfig, dest: Path, *, name: str, platform: str, reference: str,
    editable: list[str],
) -> str:  # fmt: skip
    """Copy ``folder`` to ``dest`` and write its task.yaml (``editable``: from
    :func:`~aka.importers._arena_config.sources`); returns what was done."""
    leaving = outside_links(folder)
    _copy(folder, dest)
    timing, through = _timing(dest)
    done = [timing]
    if leaving:
        done.append(f"links leading out of the folder copied as their content: {'; '.join(leaving[:4])}"
                    + (f" and {len(leaving) - 4} more" if len(leaving) > 4 else ""))  # fmt: skip
    if not cfg.source_file_path:
        done.append(
            f"no source_file_path: {', '.join(editable)} (what the commands run) is editable"
        )
    reason = skip_reason(cfg.platform_support, platform)
    if reason:
        done.append(f"cannot run on this platform: {reason}")
    elif note := nvidia_fp8(dest, platform):
        done.append(note)
    first = editable[0]
    target = (cfg.target_kernel_functions or ["main"])[0]
    entry = (
        f"{first}:{target}"
        if first.endswith((".py", ".cu", ".cpp"))
        else "scripts/task_runner.py:main"
    )
    where = origin(folder, "agentkernelarena")
    if cfg.platform_support.required_arch:
        where += f" (required_arch {cfg.platform_support.required_arch})"
    commands = {
        "compile": cfg.compile_command,
        "correctness": cfg.correctness_command,
        "performance": cfg.performance_command,
        "skip_reason": reason,
        # The helper asks for the device around its timed loops; without it, the
        # whole performance command runs with the device to itself.
        "timing_gate": "helper" if through else "command",
    }
    if (dest / PYTEST_PERF).is_file():
        commands["report"] = PYTEST_REPORT
    spec = {
        "name": name,
        "type": cfg.task_type,
        "origin": where,
        "instructions": (cfg.prompt.instructions or "").strip()
        or f"Optimize {', '.join(cfg.target_kernel_functions)} in {', '.join(editable)}.",
        "backend": _backend(cfg.task_type),
        "reference": reference,
        "source_dir": ".",
        "editable": editable,
        "entry": entry,
        "targets": cfg.target_kernel_functions,
        "commands": commands,
    }
    write_spec(dest, spec)
    return "; ".join(done)
