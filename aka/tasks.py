"""Task specs: a task is a folder of data, validated at the edge.

A task folder ``tasks/<type>/<suite>/<name>/`` holds ``task.yaml`` (a :class:`TaskSpec`),
a reference module, and the starting sources under ``source/``. Task *types* differ only
by fields of the spec (backend, which files are editable, whether the reference is
visible to the agent), never by branches in the pipeline.

The reference module defines:

- ``make_inputs(shape: dict[str, int], dtype: torch.dtype, device: str, seed: int) -> tuple``
  fresh inputs for one trial (distributions should not be only standard normal);
- ``reference(*inputs, **shape) -> torch.Tensor`` the ground truth, computed in fp32 or
  fp64 whatever the input dtype;
- optionally ``work(shape: dict[str, int], dtype: torch.dtype) -> dict`` with ``bytes`` and
  ``flops`` moved/done by an ideal kernel (for speed-of-light headroom).

The candidate's ``entry`` callable takes the same positional inputs (plus the shape as
keywords when ``pass_shape`` is set) and returns the output tensor.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from aka.backends import BACKENDS, entry_suffixes
from aka.errors import InputError
from aka.kind_specs import SOURCE_LOCK, CommandSpec, ImageSpec, RepositorySpec
from aka.tolerance import effective_atol
from aka.yamlfile import read_yaml_mapping

TASK_FILE = "task.yaml"
Shape = dict[str, int]
VARIANT_PREFIX = "aka_"
"""A shape key with this prefix is no size: it selects a variant of the inputs, which the
task's ``make_inputs`` reads (an imported task's held-out stress case, ``aka_stressed``),
so a held-out shape may carry one its tuning shapes lack."""


def size_names(shape: Shape) -> frozenset[str]:
    """The keys of ``shape`` that are sizes (not :data:`VARIANT_PREFIX` keys)."""
    return frozenset(k for k in shape if not k.startswith(VARIANT_PREFIX))


Device = Literal["cuda", "cpu"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tolerance(_Strict):
    """Absolute and relative tolerance for ``allclose`` against the reference."""

    atol: float = Field(ge=0, description="Absolute tolerance.")
    rtol: float = Field(ge=0, description="Relative tolerance.")
    rms_atol: float = Field(
        default=0.0,
        ge=0,
        description="Added to atol as a fraction of the reference output's root mean square, "
        "case by case. An absolute atol is blind to outputs whose scale shrinks with the sizes "
        "(a softmax over 24576 columns is about 4e-5 everywhere, so zeros pass atol 1e-4); this "
        "one follows the output.",
    )

    def atol_at(self, rms: float) -> float:
        """The absolute tolerance of a case whose reference output has this RMS."""
        return effective_atol(self.model_dump(), rms)


class Shapes(_Strict):
    """Problem sizes. Held-out shapes are never shown to agents."""

    tuning: list[Shape] = Field(min_length=1, description="GPU shapes the agent may tune for.")
    heldout: list[Shape] = Field(default_factory=list, description="GPU shapes kept from agents.")
    cpu: list[Shape] = Field(
        default_factory=list, description="Tiny shapes for the CPU (Triton interpreter)."
    )
    cpu_heldout: list[Shape] = Field(
        default_factory=list, description="Tiny held-out shapes for the CPU."
    )

    def for_device(self, device: str, *, heldout: bool = False) -> list[Shape]:
        """The shapes that apply on ``device`` (``cpu`` or ``cuda[:N]``)."""
        if device == "cpu":
            return self.cpu_heldout if heldout else self.cpu
        return self.heldout if heldout else self.tuning


_COMMAND_DEFAULTS = {
    "dtypes": ["float32"],
    "tolerances": {"float32": {"atol": 0.0, "rtol": 0.0}},
    "shapes": {"tuning": [{"case": 0}]},
    "devices": ["cuda"],
}
"""Fields a command-driven task does not use (its own scripts decide), filled if absent."""


class TaskSpec(_Strict):
    """One task, as written in ``task.yaml``. Unknown keys are rejected."""

    name: str = Field(description="Unique task name (also the folder name).")
    type: str = Field(
        description="Task type label: triton2triton, torch2triton, instruction2triton, "
        "cuda2cuda, torch2cuda, ... Informational: behaviour comes from the fields below."
    )
    origin: str = Field(default="", description="What the op is modelled on (project, paper).")
    instructions: str = Field(description="What the agent is asked to do.")
    backend: str = Field(
        description="The kind of kernel the candidate must launch: a row of the backend "
        "table (aka.backends: triton, cuda, torch)."
    )
    kind: str | None = Field(
        default=None,
        description="The task kind that stages and judges it (aka.kinds); default from the "
        "fields: repository, image, command (a `commands` block) or kernel.",
    )
    reference: str = Field(default="reference.py", description="Reference module, task-relative.")
    source_dir: str = Field(default="source", description="Starting sources, task-relative.")
    editable: list[str] = Field(
        min_length=1,
        description="Files under source_dir the agent may edit; only these are "
        "taken from the candidate at evaluation.",
    )
    entry: str = Field(
        description="Candidate callable as 'file.py:function' under source_dir. It may live in "
        "a non-editable file that imports the editable kernels (e.g. a model whose RMSNorm is "
        "the editable kernel, for end-to-end tasks)."
    )
    targets: list[str] = Field(
        default_factory=list, description="Symbols (kernels) the agent should optimize."
    )
    pass_shape: bool = Field(default=False, description="Pass the shape dict as keywords.")
    reference_visible: bool = Field(
        default=True,
        description="Copy the reference into the agent's workspace (False for instruction tasks).",
    )
    dtypes: list[str] = Field(min_length=1, description="torch dtype names, e.g. float16.")
    tolerances: dict[str, Tolerance] = Field(description="Tolerance per dtype name.")
    shapes: Shapes
    seeds: int = Field(default=3, ge=1, le=32, description="Correctness trials per shape.")
    eval_timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="Whole-evaluation limit in seconds for this task (a run's "
        "timing.eval_timeout_s overrides it); default: derived from shapes and budgets.",
    )
    devices: list[Device] = Field(default=["cuda", "cpu"], description="Devices it runs on.")
    forbidden: list[str] = Field(
        default_factory=list,
        description="Dotted names the candidate must not use (e.g. torch.softmax).",
    )
    operators: Literal["any", "plumbing"] = Field(
        default="any",
        description="Which library operators the candidate's calls may run: any but the "
        "forbidden ones, or (plumbing) only allocation, copies and views plus "
        "allowed_operators, so that no operator a forbidden list forgot computes the answer.",
    )
    allowed_operators: list[str] = Field(
        default_factory=list,
        description="With operators: plumbing, further operators the kernel's wrapper may "
        "run (dotted names such as torch.div, or aten::div).",
    )
    tunables: dict[str, list[int]] = Field(
        default_factory=dict,
        description="Module-level integer constants in the entry file and the values a "
        "search agent may try (e.g. BLOCK_SIZE: [256, 512, 1024]).",
    )
    requires: list[str] = Field(
        default_factory=list, description="Modules needed at evaluation (e.g. triton)."
    )

    commands: CommandSpec | None = Field(
        default=None,
        description="Set for command-driven tasks: the task's own compile, correctness and "
        "performance commands judge the candidate (dtypes, tolerances and shapes are unused).",
    )

    repository: RepositorySpec | None = Field(
        default=None,
        description="Set for repository tasks: the sources under source_dir are a pinned "
        "checkout, stored with the task at run start. Needs `commands`.",
    )
    image: ImageSpec | None = Field(
        default=None,
        description="Set for image tasks: the sources under source_dir are seeded from a "
        "container image, where the commands also run. Needs `commands`.",
    )

    @model_validator(mode="before")
    @classmethod
    def _command_defaults(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("commands") is not None:
            return {**_COMMAND_DEFAULTS, **data}
        return data

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, v: str) -> str:
        if v not in BACKENDS:
            raise ValueError(f"unknown backend {v!r}; use one of {sorted(BACKENDS)}")
        return v

    @field_validator("entry")
    @classmethod
    def _entry_form(cls, v: str) -> str:
        suffixes = "|".join(s.lstrip(".") for s in entry_suffixes())
        if not re.fullmatch(rf"[\w./-]+\.({suffixes}):\w+", v):
            raise ValueError("must look like 'kernel.py:function_name'")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        missing = [d for d in self.dtypes if d not in self.tolerances]
        if missing:
            raise ValueError(f"tolerances missing for dtypes {missing}")
        if "cpu" in self.devices and not self.shapes.cpu:
            raise ValueError("devices includes cpu but shapes.cpu is empty")
        if (self.repository or self.image) and self.commands is None:
            raise ValueError("repository and image tasks need a `commands` block")
        if self.repository and self.image:
            raise ValueError("set either `repository` or `image`, not both")
        allowed = BACKENDS[self.backend].suffixes
        if not self.entry_file.endswith(allowed):
            raise ValueError(f"entry file of a {self.backend} task must end in one of {allowed}")
        return self

    @property
    def entry_file(self) -> str:
        """The file part of ``entry``."""
        return self.entry.split(":", 1)[0]

    @property
    def entry_symbol(self) -> str:
        """The function part of ``entry``."""
        return self.entry.split(":", 1)[1]


class Task(BaseModel):
    """A loaded task: its spec plus where it lives and how it is named in selectors."""

    model_config = ConfigDict(frozen=True)

    spec: TaskSpec
    path: Path
    key: str = Field(
        description="Path relative to the tasks root, posix (e.g. triton2triton/llm/softmax)."
    )

    @property
    def name(self) -> str:
        """The task's name."""
        return self.spec.name


def _format_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"field '{loc}': {err['msg']}")
    return "; ".join(parts)


def load_task(folder: Path, *, root: Path | None = None) -> Task:
    """Load and validate one task folder.

    Raises:
        InputError: missing ``task.yaml``, bad YAML, schema errors, missing files, or a
            symlink that leaves the task folder, each naming the file, the field and
            the fix.
    """
    spec_path = folder / TASK_FILE
    raw = read_yaml_mapping(
        spec_path,
        missing="no task.yaml",
        missing_where=folder,
        missing_fix="add a task.yaml (see `aka tasks new`)",
        docs="docs/tasks.md",
    )
    try:
        spec = TaskSpec.model_validate(raw)
    except ValidationError as exc:
        raise InputError(
            _format_validation(exc),
            where=str(spec_path),
            fix="see the task schema in docs/tasks.md",
        ) from None
    _refuse_escaping_links(folder)
    if (spec.repository or spec.image) and not (folder / SOURCE_LOCK).is_file():
        # The sources arrive at run start (checkout or image seed); checked then.
        key = folder.resolve().relative_to(root.resolve()).as_posix() if root else folder.name
        return Task(spec=spec, path=folder, key=key)
    for rel, field_name in [
        (spec.reference, "reference"),
        (f"{spec.source_dir}/{spec.entry_file}", "entry"),
    ] + [(f"{spec.source_dir}/{e}", "editable") for e in spec.editable]:
        found = folder / rel
        # Repository and image tasks may declare editable directories.
        if not (found.exists() if field_name == "editable" and spec.commands else found.is_file()):
            raise InputError(
                f"field '{field_name}': file {rel!r} does not exist",
                where=str(spec_path),
                fix=f"create {folder / rel} or correct the field",
            )
    key = folder.resolve().relative_to(root.resolve()).as_posix() if root else folder.name
    return Task(spec=spec, path=folder, key=key)


def _refuse_escaping_links(folder: Path) -> None:
    """Refuse a symlink in the task folder whose target lies outside it.

    A task's tree is stored as its bytes, a symlink as its target's name, so a link
    leaving the folder would let the evaluator and the workspace read a file the task
    digest does not pin (its content could change under an unchanged digest), or pull
    any file of the machine (``/etc/passwd``) into a workspace. Links that stay inside
    the task are kept as links.
    """
    base = folder.resolve()
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                continue
            target = Path(os.path.realpath(path))
            if not target.is_relative_to(base):
                raise InputError(
                    f"symlink {path.relative_to(folder).as_posix()!r} points outside the "
                    f"task folder (to {target})",
                    where=str(folder),
                    fix="copy the file into the task folder instead of linking to it "
                    "(a task's digest must pin every byte the evaluator reads)",
                )


def discover(root: Path, *, under: Path | None = None) -> list[Task]:
    """Every task under ``under`` (default: ``root``), keyed relative to ``root``."""
    return [load_task(p.parent, root=root) for p in sorted((under or root).rglob(TASK_FILE))]


def select(root: Path, selectors: list[str], *, where: str | None = None) -> list[Task]:
    """Tasks matching selectors: paths relative to ``root``; a folder selects all below it.

    Raises:
        InputError: a selector matches no task.
    """
    chosen: dict[str, Task] = {}
    for sel in selectors:
        target = root / sel
        if target.exists() and not target.resolve().is_relative_to(root.resolve()):
            raise InputError(
                f"task selector {sel!r} resolves outside tasks_root "
                f"({target.resolve()} is not under {root.resolve()})",
                where=where,
                fix=f"select a task folder under {root} (a path relative to it, no '..')",
            )
        if not target.exists():
            raise InputError(
                f"task selector {sel!r} matches no task (no {target})",
                where=where,
                fix=f"use a path relative to {root}; `aka tasks list` shows them",
            )
        found = (
            [load_task(target, root=root)]
            if (target / TASK_FILE).is_file()
            else discover(root, under=target)
        )
        if not found:
            raise InputError(
                f"task selector {sel!r} matches no task",
                where=where,
                fix="`aka tasks list` shows them",
            )
        for task in found:
            chosen.setdefault(task.key, task)
    return [chosen[k] for k in sorted(chosen)]


def baseline_task(task: Task) -> Task:
    """The task as the baseline is judged: forbidden names and backend checks are for candidates.

    A torch2triton task's starting source *is* the torch code the candidate may not call
    (and launches no Triton kernel), so the baseline evaluated as a candidate would
    otherwise be flagged; the baseline is the trusted starting point, not a submission.
    """
    spec = task.spec.model_copy(update={"forbidden": [], "backend": "torch", "operators": "any"})
    return task.model_copy(update={"spec": spec})
