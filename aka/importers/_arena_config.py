"""The reader of an AgentKernelArena task folder: its ``config.yaml`` and the files it names.

What the folder says is checked at the edge, before anything is copied: :class:`ArenaConfig`
takes upstream's keys as upstream writes them (unknown ones ignored, a command given as a
list run one after another), :func:`read_config` words every error with the file, the
field and the fix, and :func:`sources` and :func:`reference_script` find the files the
agent edits and the script that judges it, so a folder missing either is refused whole.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aka.config import format_errors
from aka.errors import InputError
from aka.importers._arena_timing import PYTEST_PERF
from aka.yamlfile import read_yaml_mapping

CONFIG = "config.yaml"
CONFIGS = (CONFIG, "config.yml")
MISNAMED = (
    "holds config.yml and no config.yaml: aka reads config.yaml, as AgentKernelArena does",
    "rename it to config.yaml",
)


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


def reference_script(folder: Path, cfg: ArenaConfig) -> str | None:
    """The script that judges candidates: scripts/task_runner.py, or the first existing
    ``.py`` file the correctness command names."""
    if (folder / "scripts" / "task_runner.py").is_file():
        return "scripts/task_runner.py"
    for word in cfg.correctness_command.replace("&&", " ").split():
        if word.endswith(".py") and (folder / word).is_file():
            return word
    return None
