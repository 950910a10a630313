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
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aka.config import format_errors
from aka.errors import InputError
from aka.importers._arena_timing import (
    BEGIN,
    PYTEST_PERF,
    PYTEST_REPORT,
    inject_helper,
    place_pytest_helper,
    times_with_helper,
)
from aka.importers._common import (
    ImportResult,
    Outcome,
    origin,
    prepare,
    slug,
    unique_names,
    write_spec,
)
from aka.yamlfile import read_yaml_mapping

CONFIG = "config.yaml"
SUPPORTED = {None, "", "supported", "ok", "enabled", "available", "active"}
AMD_ONLY = ("hip", "flydsl")
"""Task types whose kernels are written for AMD GPUs (hip2hip, torch2hip, flydsl2flydsl, ...)."""


class PlatformSupport(BaseModel):
    """Where the task can run."""

    model_config = ConfigDict(extra="ignore")
    required_arch: str | None = None
    status: str | None = None
    skip_reason: str | None = None


class Prompt(BaseModel):
    """What the agent is told."""

    model_config = ConfigDict(extra="ignore")
    instructions: str | None = None


def _joined(v: object) -> object:
    """A command may be a string or a list of strings (run one after another)."""
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return " && ".join(v)
    return v


KNOWN_TYPES = (
    "triton2triton", "torch2triton", "instruction2triton", "cuda2cuda", "torch2cuda",
    "cuda2triton", "torch2torch", "hip2hip", "torch2hip", "cuda2hip", "flydsl2flydsl",
    "torch2flydsl", "triton2flydsl", "repository", "image_kernel",
)  # fmt: skip
"""AgentKernelArena's task types (its task folders and its own config check): a type one
letter off one of them is a typo, not a new kind of task."""
TASK_TYPE = re.compile(r"[a-z]+2[a-z]+|repository|image_kernel")
"""Names of AgentKernelArena's task-type folders (``tasks/triton2triton/...``)."""


class ArenaConfig(BaseModel):
    """An AgentKernelArena ``config.yaml``; keys aka does not use are ignored."""

    model_config = ConfigDict(extra="ignore")
    source_file_path: list[str] = Field(default_factory=list)
    target_kernel_functions: list[str] = Field(default_factory=list)
    compile_command: str = Field(min_length=1)
    correctness_command: str = Field(min_length=1)
    performance_command: str = Field(min_length=1)
    task_type: str
    platform_support: PlatformSupport = Field(default_factory=PlatformSupport)
    prompt: Prompt = Field(default_factory=Prompt)
    repo_url: str | None = None
    repository_language: str | None = None
    image_repo_path: str | None = None
    task_type_from: str | None = Field(default=None, exclude=True)
    """The folder ``task_type`` was read from when config.yaml gives none."""

    @field_validator("platform_support", "prompt", mode="before")
    @classmethod
    def _absent(cls, v: object) -> object:
        """``prompt: null`` (upstream writes it) is the optional section left out."""
        return {} if v is None else v

    @field_validator("source_file_path", mode="before")
    @classmethod
    def _listify(cls, v: object) -> object:
        return [v] if isinstance(v, str) else [] if v is None else v

    @field_validator("target_kernel_functions", mode="before")
    @classmethod
    def _names(cls, v: object) -> object:
        """One name, a list, or names joined by commas (``a,b`` as rocmbench writes)."""
        items = [v] if isinstance(v, str) else [] if v is None else v
        if not isinstance(items, list):
            return v
        return [n.strip() for x in items for n in str(x).split(",") if n.strip()]

    @field_validator("compile_command", "correctness_command", "performance_command", mode="before")
    @classmethod
    def _commands(cls, v: object) -> object:
        return _joined(v)


def read_config(folder: Path) -> ArenaConfig:
    """Parse and check a folder's ``config.yaml``.

    Raises:
        InputError: missing file, bad YAML, a missing or malformed field, or a source
            file that does not exist; the message names the file, the field and the fix.
    """
    path = folder / CONFIG
    if not path.is_file() and (folder / "config.yml").is_file():
        raise InputError(MISNAMED[0], where=str(folder), fix=MISNAMED[1])
    raw = read_yaml_mapping(
        path,
        missing="no config.yaml",
        missing_where=folder,
        missing_fix="pass an AgentKernelArena task folder",
        docs="docs/authoring.md",
    )
    raw.pop("task_type_from", None)
    if not raw.get("task_type"):  # upstream keeps tasks under tasks/<type>/...
        typed = next((p for p in folder.parents if TASK_TYPE.fullmatch(p.name)), None)
        if typed is not None:
            raw = {**raw, "task_type": typed.name, "task_type_from": str(typed)}
    try:
        cfg = ArenaConfig.model_validate(raw)
    except ValidationError as exc:
        missing = [".".join(map(str, e["loc"])) for e in exc.errors() if e["type"] == "missing"]
        fix = (
            f"add {', '.join(missing)} (the shell command run in the task folder for that stage)"
            if any(m.endswith("_command") for m in missing)
            else "add task_type (triton2triton, torch2hip, ...), or keep the folder under one "
            "named for its type as upstream does (tasks/triton2triton/NAME)"
            if "task_type" in missing
            else "see the AgentKernelArena config format in docs/authoring.md"
        )
        raise InputError(format_errors(exc), where=str(path), fix=fix) from None
    return cfg


def _check_source(folder: Path, rel: str, where: str) -> None:
    """One ``source_file_path`` entry names a file inside the task folder.

    Raises:
        InputError: outside the folder (``../shared/x.py``, an absolute path: the task
            folder is all an evaluation copies, so the task could not run), a folder, or
            nothing.
    """
    field = f"field 'source_file_path': {rel!r}"
    if PurePosixPath(rel).is_absolute() or ".." in PurePosixPath(rel).parts:
        raise InputError(
            f"{field} must be inside the task folder: the task folder is all that is "
            "copied to run it",
            where=where,
            fix=f"copy the file into {folder} (source/NAME) and list it as source/NAME",
        )
    if (folder / rel).is_dir():
        raise InputError(
            f"{field} is a folder; a file is required (the file the agent edits)",
            where=where,
            fix=f"list each file to edit under {folder / rel} (e.g. {rel.rstrip('/')}/NAME.py)",
        )
    if not (folder / rel).is_file():
        raise InputError(
            f"{field} does not exist",
            where=where,
            fix=f"create {folder / rel} or correct the path",
        )


def sources(folder: Path, cfg: ArenaConfig) -> list[str]:
    """The editable files: ``source_file_path``, or where it is empty (instruction tasks,
    whose kernel stubs sit in the test file) the Python files the commands run.

    Raises:
        InputError: a listed file that does not exist, or no file to edit at all.
    """
    where = str(folder / CONFIG)
    for rel in cfg.source_file_path:
        _check_source(folder, rel, where)
    if cfg.source_file_path:
        return list(cfg.source_file_path)
    commands = " ".join((cfg.compile_command, cfg.correctness_command, cfg.performance_command))
    named = re.findall(r"[\w./-]+\.py\b", commands)
    found = [
        rel for rel in dict.fromkeys(named)
        if (folder / rel).is_file() and not rel.startswith("scripts/") and rel != PYTEST_PERF
    ]  # fmt: skip
    if not found:
        raise InputError(
            "field 'source_file_path' is empty and no command runs a .py file of the folder",
            where=where,
            fix="list the file the agent edits under source_file_path",
        )
    return found


def misspelt_type(cfg: ArenaConfig) -> tuple[str, str] | None:
    """Why ``task_type`` is refused as a typo (``trition2triton``), and the fix, or None.

    A type close to a known one but not one of them would be imported as whatever its
    last word says (its backend), silently; one far from all of them may be a kind
    upstream added since, and is imported with a note (:func:`unknown_type_note`)."""
    kind = cfg.task_type.lower()
    if kind in KNOWN_TYPES:
        return None
    near = difflib.get_close_matches(kind, KNOWN_TYPES, n=1, cutoff=0.85)
    if not near:
        return None
    return (
        f"task_type {cfg.task_type!r} is not a task type; {near[0]} is (known: "
        f"{', '.join(KNOWN_TYPES)})",
        f"set task_type: {near[0]} in config.yaml",
    )


def unknown_type_note(cfg: ArenaConfig) -> str:
    """The import line's note for a task type aka does not know, or ''."""
    if cfg.task_type.lower() in KNOWN_TYPES:
        return ""
    return (
        f"task_type {cfg.task_type} is not one aka knows ({', '.join(KNOWN_TYPES)}): "
        f"imported as a {_backend(cfg.task_type)} task"
    )


def unsupported(cfg: ArenaConfig) -> tuple[str, str] | None:
    """Why aka cannot import the task as a command task, and the fix, or None."""
    kind = cfg.task_type.lower()
    if kind == "image_kernel":
        return (
            "an image_kernel task: its sources live in a container image that AgentKernelArena's "
            "run configuration names, not the task folder",
            "write an aka image task (image.ref, image.digest, image.path; docs/repo_tasks.md)",
        )
    if kind == "repository":
        return (
            f"a repository task ({cfg.repo_url or 'no repo_url'}) cloned at whatever commit is "
            "newest: aka judges a repository at a pinned commit",
            "write an aka repository task with repository.url and repository.commit "
            "(docs/repo_tasks.md)",
        )
    return None


def local_platform() -> str:
    """``sm_XY`` (NVIDIA), the gfx architecture (AMD ROCm), or ``cpu``."""
    try:
        import torch

        if not torch.cuda.is_available():
            return "cpu"
        if getattr(torch.version, "hip", None):
            return str(torch.cuda.get_device_properties(0).gcnArchName).split(":")[0]
        major, minor = torch.cuda.get_device_capability(0)
        return f"sm_{major}{minor}"
    except ImportError:
        return "cpu"


def _sm(arch: str) -> int:
    """The compute capability number of ``sm_XY`` (0 when it is not one)."""
    digits = arch.removeprefix("sm_").rstrip("a")
    return int(digits) if arch.startswith("sm_") and digits.isdigit() else 0


def skip_reason(ps: PlatformSupport, platform: str) -> str | None:
    """Why the task cannot run on ``platform``, or None when it can."""
    status = (ps.status or "").lower()
    if status not in SUPPORTED:
        return ps.skip_reason or f"platform_support.status is {ps.status!r}"
    arch = ps.required_arch
    if arch and arch != platform:
        if arch.startswith("gfx") or platform.startswith("gfx"):
            return f"needs {arch}; this platform is {platform} ({ps.skip_reason or 'other vendor'})"
        if platform == "cpu":
            return f"needs a GPU ({arch}); this platform is cpu"
        if _sm(arch) > _sm(platform):
            return f"needs {arch} or newer; this platform is {platform}"
    return None


def amd_only(cfg: ArenaConfig) -> str | None:
    """Why the task is for AMD GPUs only (HIP or FlyDSL kernels), or None."""
    kind = cfg.task_type.lower()
    hip = [s for s in cfg.source_file_path if s.endswith(".hip")]
    if (cfg.repository_language or "").lower() in AMD_ONLY:
        return f"a {cfg.task_type} task in {cfg.repository_language}: written for AMD GPUs; aka runs NVIDIA (CUDA, Triton) and CPU kernels"
    if any(tag in kind for tag in AMD_ONLY) or hip:
        what = f"{cfg.task_type} task" + (f" with HIP sources {hip}" if hip else "")
        return f"a {what}: its kernels are written for AMD GPUs; aka runs NVIDIA (CUDA, Triton) and CPU kernels"
    return None


def _backend(task_type: str) -> str:
    t = task_type.lower()
    if t.endswith("triton"):
        return "triton"
    return "torch" if t.endswith("torch") else "cuda"


def reference_script(folder: Path, cfg: ArenaConfig) -> str | None:
    """The script that judges candidates: scripts/task_runner.py, or the first existing
    ``.py`` file the correctness command names."""
    if (folder / "scripts" / "task_runner.py").is_file():
        return "scripts/task_runner.py"
    for word in cfg.correctness_command.replace("&&", " ").split():
        if word.endswith(".py") and (folder / word).is_file():
            return word
    return None


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


def dangling_links(folder: Path) -> list[str]:
    """Links in ``folder`` (where the copy goes) whose target is gone, relative to it."""
    skip = _skipped(folder)
    found: list[str] = []
    for where, dirs, files in os.walk(folder):
        left_out = skip(where, [*dirs, *files])
        dirs[:] = [d for d in dirs if d not in left_out]
        for name in (n for n in [*dirs, *files] if n not in left_out):
            path = Path(where) / name
            if path.is_symlink() and not path.exists():
                found.append(path.relative_to(folder).as_posix())
    return sorted(found)


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
    :func:`sources`); returns what was done."""
    _copy(folder, dest)
    timing, through = _timing(dest)
    done = [timing]
    if not cfg.source_file_path:
        done.append(
            f"no source_file_path: {', '.join(editable)} (what the commands run) is editable"
        )
    reason = skip_reason(cfg.platform_support, platform)
    if reason:
        done.append(f"cannot run on this platform: {reason}")
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


CONFIGS = (CONFIG, "config.yml")
MISNAMED = (
    "holds config.yml and no config.yaml: aka reads config.yaml, as AgentKernelArena does",
    "rename it to config.yaml",
)


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
