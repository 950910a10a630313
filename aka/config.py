"""Run configs: what to run, with which arms, how often, where, and how to score.

Validated once at the edge (:func:`load_config`); unknown keys are rejected and every
error names the file, the field and the fix. Past the loader nothing is a raw dict.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from aka.errors import InputError
from aka.scoring import parse_policy, policy_names
from aka.yamlfile import read_yaml

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PromptConfig(_Strict):
    """An arm's prompt: a template over the task's fields, and/or extra sections.

    Placeholders (``str.format`` style) are listed in :data:`aka.prompt.PROMPT_FIELDS`;
    ``{default}`` is the standard prompt, so a template can wrap it.
    """

    template: str | None = Field(default=None, description="Inline template text.")
    template_file: str | None = Field(
        default=None, description="Template file (relative to the config file's folder)."
    )
    extra_sections: list[str] = Field(
        default_factory=list, description="Text appended to the prompt, in order."
    )

    @model_validator(mode="after")
    def _one_template(self) -> PromptConfig:
        if self.template is not None and self.template_file is not None:
            raise ValueError("set `template` or `template_file`, not both")
        return self


class FileConfig(_Strict):
    """A file or directory placed into the workspace before the agent starts."""

    path: str = Field(description="Destination, relative to the workspace root.")
    source: str | None = Field(
        default=None, description="Host file or directory (relative to the config's folder)."
    )
    content: str | None = Field(default=None, description="Inline file text.")

    @model_validator(mode="after")
    def _one_origin(self) -> FileConfig:
        if (self.source is None) == (self.content is None):
            raise ValueError("set exactly one of `source` or `content`")
        return self


class McpServerConfig(_Strict):
    """An MCP server (stdio), written in the agent CLI's own MCP configuration format."""

    command: str = Field(min_length=1, description="Program that starts the server.")
    args: list[str] = Field(default_factory=list, description="Its arguments.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment of the server (recorded: no secrets)."
    )


class MemoryConfig(_Strict):
    """A directory that persists across the arm's attempts, in planned order."""

    key: str = Field(description="Memory name; attempts sharing a key share the memory.")
    across_runs: bool = Field(
        default=False, description="Start from the latest memory with this key in any run."
    )
    path: str = Field(default=".memory", description="Directory in the workspace.")

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        if not NAME.match(v):
            raise ValueError("use letters, digits, '_', '.', '-' (no spaces)")
        return v


class ArmConfig(_Strict):
    """One arm of an experiment: an agent, its overrides and its treatments.

    Treatments (prompt, files, MCP servers, tool lists, environment, memory) are
    resolved into a content-addressed arm at run start (docs/treatments.md).
    """

    name: str = Field(description="Arm name, unique in the config (e.g. baseline, treatment).")
    agent: str = Field(description="Agent name (`aka agents list`).")
    model: str | None = Field(default=None, description="Model override for the agent.")
    effort: str | None = Field(default=None, description="Reasoning effort override.")
    max_iterations: int | None = Field(default=None, ge=1, description="Turn/iteration limit.")
    timeout_seconds: float = Field(default=1800.0, gt=0, description="Wall-clock budget.")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Agent-specific options; unknown keys are refused at run start (docs/agents.md).",
    )
    prompt: PromptConfig | None = Field(default=None, description="Prompt template/sections.")
    files: list[FileConfig] = Field(
        default_factory=list, description="Files placed into the workspace (AGENTS.md, skills/)."
    )
    mcp_servers: dict[str, McpServerConfig] = Field(
        default_factory=dict, description="MCP servers by name."
    )
    allowed_tools: list[str] = Field(
        default_factory=list, description="Tools the agent may use (where it supports it)."
    )
    disallowed_tools: list[str] = Field(
        default_factory=list, description="Tools the agent may not use (where it supports it)."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment variables (values recorded)."
    )
    secret_env: list[str] = Field(
        default_factory=list,
        description="Names of variables passed from the host environment (values never recorded).",
    )
    memory: MemoryConfig | None = Field(
        default=None, description="Memory carried across the arm's attempts."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME.match(v):
            raise ValueError("use letters, digits, '_', '.', '-' (no spaces)")
        return v


class TimingSettings(_Strict):
    """Knobs passed to the timing engine."""

    target_rel_ci: float = Field(
        default=0.005, gt=0, lt=1, description="Stop at this CI half-width."
    )
    max_time_s: float = Field(default=2.0, gt=0, description="Time budget per shape, seconds.")
    min_samples: int = Field(default=10, ge=3, description="Samples per arm at least.")
    eval_timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="Whole-evaluation limit in seconds (a task's eval_timeout_s, else "
        "derived from the task: compile budget + time per shape); a candidate that runs past "
        "it is stopped and scored 0.",
    )


class EvaluatorSettings(_Strict):
    """How the evaluator runs its processes (never what it measures or how it judges)."""

    warm_workers: bool = Field(
        default=True,
        description="Fork evaluation processes from a warm zygote, with the next evaluation's "
        "processes prepared ahead and stopped while a candidate times (docs/eval_workers.md); "
        "false starts a fresh interpreter per process (slower, same verdicts).",
    )


class ScoringSettings(_Strict):
    """Which pure scoring policy turns measurements into a score.

    The policy is checked against :mod:`aka.scoring`'s registry rather than a list kept
    here, so a policy registered with ``register_policy`` is accepted without touching
    this module (docs/architecture.md, "How to add a scoring policy").
    """

    policy: str = Field(
        default="agentkernelarena",
        description="Scoring policy: a registered name or a spec such as "
        "log_speedup:floor=0.25,cap=8 (docs/scoring.md).",
    )

    @field_validator("policy")
    @classmethod
    def _registered(cls, v: str) -> str:
        try:
            parse_policy(v)
        except InputError as exc:
            raise ValueError(f"{exc.message}; registered: {', '.join(policy_names())}") from None
        return v


class DockerSettings(_Strict):
    """The ``docker`` runner: one container per GPU from an image with aka installed."""

    image: str = Field(description="Image with aka installed (runners/Dockerfile builds one).")
    mounts: dict[str, str] = Field(
        default_factory=dict, description="Extra binds, host -> container path."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment for every container."
    )
    network_mode: str = Field(default="host", description="Docker network mode.")


class SlurmSettings(_Strict):
    """The ``slurm`` runner: workers as a job array on a cluster."""

    partition: str | None = Field(default=None, description="--partition (default: the cluster's).")
    account: str | None = Field(default=None, description="--account (default: the user's).")
    gpus_per_node: int = Field(default=1, ge=0, description="GPUs per node; 0 runs CPU workers.")
    nodes: int = Field(default=1, ge=1, description="Nodes; array size is nodes x gpus_per_node.")
    cpu_workers: int = Field(default=1, ge=1, description="Array size when gpus_per_node is 0.")
    time_limit: str = Field(default="04:00:00", description="--time per worker.")
    cpus_per_worker: int = Field(default=8, ge=1, description="--cpus-per-task.")
    mem: str | None = Field(default=None, description="--mem per worker, e.g. 32G.")
    setup: list[str] = Field(
        default_factory=list, description="Shell lines run before each worker."
    )
    extra: list[str] = Field(default_factory=list, description="Further #SBATCH options.")


class RunnerSettings(_Strict):
    """Where attempts execute. ``inline`` runs them in the ``aka run`` process itself."""

    kind: Literal["inline", "local", "docker", "slurm"] = Field(
        default="inline", description="Runner."
    )
    gpus: list[int] = Field(default_factory=list, description="One worker per listed GPU.")
    workers: int | None = Field(default=None, ge=1, description="CPU workers when gpus is empty.")
    lease_ttl_s: float = Field(
        default=60.0, gt=0, description="Claim lease; a dead worker's expires."
    )
    docker: DockerSettings | None = Field(
        default=None, description="Settings of the docker runner."
    )
    slurm: SlurmSettings | None = Field(default=None, description="Settings of the slurm runner.")

    @model_validator(mode="after")
    def _needs(self) -> RunnerSettings:
        if self.kind == "docker" and self.docker is None:
            raise ValueError("runner kind 'docker' needs a `docker:` block with an image")
        return self


class RunConfig(_Strict):
    """A run: tasks × arms × repeats, on one device."""

    label: str = Field(default="run", description="Label shown in reports.")
    tasks: list[str] = Field(min_length=1, description="Task selectors relative to tasks_root.")
    tasks_root: str = Field(default="tasks", description="Folder holding the tasks.")
    arms: list[ArmConfig] = Field(min_length=1, description="One or more arms.")
    repeats: int = Field(default=1, ge=1, le=1000, description="Attempts per task per arm.")
    device: str = Field(default="auto", description="'cpu', 'cuda', 'cuda:N' or 'auto'.")
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    timing: TimingSettings = Field(default_factory=TimingSettings)
    evaluator: EvaluatorSettings = Field(default_factory=EvaluatorSettings)
    max_tries: int = Field(default=3, ge=1, le=20, description="Tries per attempt after crashes.")
    runner: RunnerSettings = Field(default_factory=RunnerSettings)

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", v):
            raise ValueError("use 'auto', 'cpu', 'cuda' or 'cuda:N'")
        return v

    @model_validator(mode="after")
    def _unique_arms(self) -> RunConfig:
        names = [a.name for a in self.arms]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"arm names must be unique; repeated: {dupes}")
        return self

    def arm(self, name: str) -> ArmConfig:
        """The arm called ``name``."""
        for a in self.arms:
            if a.name == name:
                return a
        raise KeyError(name)

    def canonical_json(self) -> bytes:
        """Deterministic JSON of the resolved config (what the ledger stores)."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()


def format_errors(exc: ValidationError) -> str:
    """One line per pydantic error: ``field 'a.b': message``."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        lines.append(f"field '{loc}': {msg}")
    return "; ".join(lines)


def parse_config(raw: object, *, where: str) -> RunConfig:
    """Validate an already-parsed config mapping."""
    if not isinstance(raw, dict):
        raise InputError(
            "expected a mapping at the top level", where=where, fix="see docs/config.md"
        )
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as exc:
        raise InputError(
            format_errors(exc), where=where, fix="see docs/config.md for every field"
        ) from None


def load_config(path: Path) -> RunConfig:
    """Read and validate a YAML or JSON run config.

    Raises:
        InputError: the file is missing, malformed, or fails validation.
    """
    raw = read_yaml(
        path,
        missing="config file not found",
        missing_where=path,
        missing_fix="pass the path of a YAML config",
    )
    return parse_config(raw, where=str(path))


def config_schema() -> dict[str, Any]:
    """The JSON schema of :class:`RunConfig` (published in docs/config.md)."""
    return RunConfig.model_json_schema()
