"""AgentKernelArena task folders become command-driven tasks.

A folder holds ``config.yaml`` (``source_file_path``, ``target_kernel_functions``,
``compile_command``, ``correctness_command``, ``performance_command``, ``task_type``,
optional ``platform_support{required_arch,status,skip_reason}`` and
``prompt{instructions}``), ``scripts/task_runner.py`` and ``source/``. The folder is
copied whole; ``task.yaml`` is written beside it with a ``commands`` block, so the
task's own scripts compile, check and time candidates (see :mod:`aka.kinds._command`),
and the runner times with aka's helper (upstream's helper names included). A task
whose platform is not available here is imported with ``commands.skip_reason`` saying
why. HIP and FlyDSL tasks (AMD GPUs) are refused with one line each: aka runs NVIDIA
and CPU kernels; so are ``image_kernel`` tasks (the image is named outside the folder)
and ``repository`` tasks (not pinned to a commit), naming the aka kind to write instead.
Where the scripts expect a generated timing helper, aka's is put in its place
(:mod:`aka.importers._arena_timing`).

This module walks the folders and decides each one; the folder's reader is
:mod:`aka.importers._arena_config`, the verdicts on its type and platform
:mod:`aka.importers._arena_support`, and the writer of the task
:mod:`aka.importers._arena_writer`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aka.errors import InputError
from aka.importers._arena_config import (
    CONFIG,
    CONFIGS,
    MISNAMED,
    TASK_TYPE,
    ArenaConfig,
    PlatformSupport,
    Prompt,
    read_config,
    reference_script,
    sources,
)
from aka.importers._arena_support import (
    AMD_ONLY,
    KNOWN_TYPES,
    SUPPORTED,
    amd_only,
    local_platform,
    misspelt_type,
    skip_reason,
    unknown_type_note,
    unsupported,
)
from aka.importers._arena_writer import REPORTS, dangling_links, write_task
from aka.importers._common import ImportResult, Outcome, prepare, slug, unique_names

# The names this module held before its reader, verdicts and writer moved out stay
# importable from it, where callers and tests import them.
__all__ = [
    "AMD_ONLY",
    "CONFIG",
    "CONFIGS",
    "KNOWN_TYPES",
    "MISNAMED",
    "REPORTS",
    "SUPPORTED",
    "TASK_TYPE",
    "ArenaConfig",
    "PlatformSupport",
    "Prompt",
    "amd_only",
    "dangling_links",
    "import_agentkernelarena",
    "import_folder",
    "local_platform",
    "misspelt_type",
    "read_config",
    "reference_script",
    "skip_reason",
    "sources",
    "unknown_type_note",
    "unsupported",
    "write_task",
]


def _misnamed(path: Path, folders: list[Path]) -> list[Path]:
    """Folders under ``path`` holding ``config.yml`` but no ``config.yaml``: a task each,
    which a folder import would otherwise pass over without a word."""
    taken = set(folders)
    return sorted(p.parent for p in path.rglob("config.yml") if p.parent not in taken)


def import_agentkernelarena(
    path: Path,
    root: Path,
    *,
    suite: str = "agentkernelarena",
    force: bool = False,
    platform: str | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> ImportResult:
    """Import one task folder (holding config.yaml) or every one under ``path``.

    A single folder that is broken raises; under a parent folder, broken task folders
    are skipped with the reason.

    Raises:
        InputError: a missing path, a folder without any config.yaml, or a broken
            single task folder.
    """
    if path.is_file() and path.name in CONFIGS:
        raise InputError(
            f"a {path.name} file, not a task folder",
            where=str(path),
            fix=f"pass the folder holding it ({path.parent})",
        )
    if not path.is_dir():
        raise InputError(
            "no such folder", where=str(path), fix="pass an AgentKernelArena task folder"
        )
    single = (path / CONFIG).is_file()
    folders = [path] if single else sorted(p.parent for p in path.rglob(CONFIG))
    misnamed = [] if single else _misnamed(path, folders)
    if not folders and not misnamed:
        raise InputError(
            "no config.yaml under this folder", where=str(path), fix="pass a task folder"
        )
    here = platform or local_platform()
    names = unique_names(folders, path, lambda p: p.name)
    result = ImportResult(on_outcome=on_outcome)
    for folder in misnamed:
        result.add(Outcome(folder, "refused", *MISNAMED))
    for folder in folders:
        try:
            result.add(import_folder(folder, root, suite=suite, force=force, platform=here,
                                     name=names[folder]))  # fmt: skip
        except InputError as exc:
            if single:
                raise
            result.add(Outcome(folder, "refused", exc.message, exc.fix or ""))
    return result


def import_folder(
    folder: Path, root: Path, *, suite: str, force: bool, platform: str, name: str | None = None
) -> Outcome:
    """Import one task folder, or refuse it (AMD-only kernels, no judging script).

    ``name``: the task's name (default: the folder's; :func:`unique_names` when several).

    Raises:
        InputError: a broken config.yaml or an existing task folder without ``force``.
    """
    cfg = read_config(folder)
    typo = misspelt_type(cfg)
    if typo:
        return Outcome(folder, "refused", *typo)
    amd = amd_only(cfg)
    if amd:
        return Outcome(
            folder, "refused", amd,
            "run it in AgentKernelArena on an AMD GPU, or port its kernel to Triton or CUDA "
            "and import that as a triton2triton or cuda2cuda task",
        )  # fmt: skip
    other = unsupported(cfg)
    if other:
        return Outcome(folder, "refused", *other)
    editable = sources(folder, cfg)  # a missing or absent source file: refused before any copy
    reference = reference_script(folder, cfg)
    if reference is None:
        return Outcome(
            folder, "refused", "no scripts/task_runner.py and no .py script in correctness_command",
            "add the script that checks candidates (scripts/task_runner.py)",
        )  # fmt: skip
    links = dangling_links(folder)
    if links:
        return Outcome(
            folder, "refused",
            f"links to files that are gone: {', '.join(links)} (the task folder is copied "
            "whole, links followed)",
            "remove each link, or put the file it names back (a link made on another "
            "machine points where this one has nothing)",
        )  # fmt: skip
    dest = root / "command" / suite / (name or slug(folder.name))
    prepare(dest, force=force)
    done = write_task(
        folder, cfg, dest, name=dest.name, platform=platform, reference=reference,
        editable=editable,
    )  # fmt: skip
    if unknown_type_note(cfg):
        done += f"; {unknown_type_note(cfg)}"
    if cfg.task_type_from:
        done += f"; task_type {cfg.task_type} from the folder {cfg.task_type_from} (config.yaml has none)"
    return Outcome(folder, "imported", done, dest=dest)
