"""Treatments: everything an A/B arm varies, resolved into one content-addressed arm.

An arm can change more than the model: the prompt, files placed in the workspace
(``AGENTS.md``, ``CLAUDE.md``, a ``skills/`` folder), MCP servers, tool allow/deny lists,
environment variables, and a memory carried from one attempt to the next. At run start
:func:`resolve_arms` validates all of it (before anything is recorded) and stores each
arm as a *resolved arm* blob: defaults filled in, file and template contents replaced by
their digests, secret values dropped (names kept). The blob's digest is on
``RunStarted.arms`` and on every ``AgentStarted``, so two runs can always be told apart,
and :func:`diff_arms` says exactly what differs between two arms.

Resume reads the resolved arm back from the content store, never the host files, so a
resumed attempt gets the same files and prompt as the first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aka import events as ev
from aka._arm_check import (
    AGENT_TREATMENTS,
    agent_treatments,
    check_arm,
    check_runner,
    source_path,
    template_text,
)
from aka._arm_diff import ArmChange, ArmDiff, diff_arms
from aka.agent import AgentSettings, McpServer
from aka.config import ArmConfig, McpServerConfig, MemoryConfig, RunConfig
from aka.errors import AkaError
from aka.prompt import render_prompt
from aka.tasks import Task
from aka_ledger import ContentStore, Envelope, Ledger, LedgerError

__all__ = [
    "AGENT_TREATMENTS",
    "ArmChange",
    "ArmDiff",
    "ResolvedArm",
    "ResolvedFile",
    "ResolvedPrompt",
    "agent_settings",
    "agent_treatments",
    "arm_difference",
    "arm_env",
    "arm_prompt",
    "check_runner",
    "diff_arms",
    "load_arm",
    "mcp_config",
    "memory_after",
    "memory_before",
    "place_files",
    "resolve_arms",
]


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ResolvedFile(_Part):
    """A placed file or directory, by content digest."""

    path: str = Field(description="Destination relative to the workspace root.")
    kind: Literal["file", "tree"] = Field(description="'file' (a blob) or 'tree' (a directory).")
    digest: str = Field(description="Blob digest (file) or tree digest (directory).")
    executable: bool = Field(default=False, description="A file placed with mode 0755.")


class ResolvedPrompt(_Part):
    """The arm's prompt treatment: a template blob and extra sections."""

    template: str | None = Field(default=None, description="Blob of the template text.")
    extra_sections: list[str] = Field(default_factory=list, description="Appended sections.")


class ResolvedArm(_Part):
    """Everything an arm gives its agent, after defaults; stored as a blob at run start.

    The arm's name is not part of it: two arms with the same treatments share a digest.
    """

    agent: str = Field(description="Agent name.")
    model: str | None = Field(default=None, description="Model override.")
    effort: str | None = Field(default=None, description="Reasoning effort override.")
    max_iterations: int | None = Field(default=None, description="Turn/iteration limit.")
    timeout_seconds: float = Field(default=1800.0, description="Wall-clock budget.")
    options: dict[str, Any] = Field(default_factory=dict, description="Agent-specific settings.")
    prompt: ResolvedPrompt = Field(default_factory=ResolvedPrompt, description="Prompt.")
    files: list[ResolvedFile] = Field(default_factory=list, description="Placed files, by path.")
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict, description="MCP.")
    allowed_tools: list[str] = Field(default_factory=list, description="Allowed tools.")
    disallowed_tools: list[str] = Field(default_factory=list, description="Denied tools.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment (plain).")
    secret_env: list[str] = Field(default_factory=list, description="Secret names (no values).")
    memory: MemoryConfig | None = Field(default=None, description="Memory settings.")

    def canonical_json(self) -> bytes:
        """Deterministic JSON: what the content store keeps and the digest covers."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()


# -- validation and resolution (run start) ---------------------------------------------


def resolve_bare(arm: ArmConfig) -> ResolvedArm:
    """The arm without its file and template contents (enough to build its settings)."""
    return ResolvedArm(
        agent=arm.agent,
        model=arm.model,
        effort=arm.effort,
        max_iterations=arm.max_iterations,
        timeout_seconds=arm.timeout_seconds,
        options=dict(arm.options),
        prompt=ResolvedPrompt(extra_sections=list(arm.prompt.extra_sections if arm.prompt else [])),
        mcp_servers=dict(arm.mcp_servers),
        allowed_tools=list(arm.allowed_tools),
        disallowed_tools=list(arm.disallowed_tools),
        env=dict(arm.env),
        secret_env=sorted(arm.secret_env),
        memory=arm.memory,
    )


def _resolve(cas: ContentStore, arm: ArmConfig, base: Path, where: str) -> ResolvedArm:
    text = template_text(arm, base, where)
    files = []
    for i, f in enumerate(arm.files):
        dest = PurePosixPath(f.path).as_posix()
        if f.content is not None:
            files.append(ResolvedFile(path=dest, kind="file", digest=cas.put(f.content.encode())))
            continue
        src = source_path(base, str(f.source), f"{where}, field 'files.{i}.source'")
        if src.is_dir():
            files.append(ResolvedFile(path=dest, kind="tree", digest=cas.snapshot(src)))
        else:
            exe = os.access(src, os.X_OK)
            files.append(ResolvedFile(path=dest, kind="file", digest=cas.put(src), executable=exe))
    bare = resolve_bare(arm)
    prompt = ResolvedPrompt(
        template=None if text is None else cas.put(text.encode()),
        extra_sections=bare.prompt.extra_sections,
    )
    return bare.model_copy(update={"prompt": prompt, "files": sorted(files, key=lambda f: f.path)})


def resolve_arms(
    cas: ContentStore,
    config: RunConfig,
    *,
    base_dir: Path,
    tasks: Sequence[Task],
    where: str,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Validate every arm's treatments, then store each resolved arm; arm name -> digest.

    Args:
        cas: where file contents, templates and the resolved arms go.
        config: the run config.
        base_dir: folder that relative ``source`` and ``template_file`` paths start from
            (the config file's folder).
        tasks: the tasks of the run (placed files may not overwrite their sources).
        where: the config's path, for messages.
        environ: the environment secret names are checked in (default: this process's).

    Raises:
        InputError: an unknown field, a missing file, a treatment the arm's agent cannot
            take, a memory arm with a parallel runner; nothing is stored before the
            checks of every arm pass.
    """
    env = os.environ if environ is None else environ
    for arm in config.arms:
        check_arm(
            arm,
            config,
            base_dir=base_dir,
            tasks=tasks,
            where=f"{where}: arm {arm.name!r}",
            environ=env,
        )
    return {
        arm.name: cas.put(
            _resolve(cas, arm, base_dir, f"{where}: arm {arm.name!r}").canonical_json()
        )
        for arm in config.arms
    }


# -- use at attempt time ------------------------------------------------------------------


def load_arm(cas: ContentStore, digest: str) -> ResolvedArm:
    """The resolved arm stored under ``digest`` (runs before treatments stored plain arms)."""
    raw = json.loads(cas.get(digest))
    raw.pop("name", None)
    return ResolvedArm.model_validate(raw)


def agent_settings(arm: ResolvedArm) -> AgentSettings:
    """The agent's settings from a resolved arm."""
    return AgentSettings(
        model=arm.model,
        effort=arm.effort,
        max_iterations=arm.max_iterations,
        timeout_seconds=arm.timeout_seconds,
        options=dict(arm.options),
        mcp_servers={
            name: McpServer(command=s.command, args=tuple(s.args), env=dict(s.env))
            for name, s in arm.mcp_servers.items()
        },
        allowed_tools=tuple(arm.allowed_tools),
        disallowed_tools=tuple(arm.disallowed_tools),
    )


def arm_env(arm: ResolvedArm, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The arm's environment for the agent: plain values, then secrets read now.

    Raises:
        AkaError: a secret is no longer set (the attempt fails and is retried).
    """
    env = os.environ if environ is None else environ
    missing = [n for n in arm.secret_env if n not in env]
    if missing:
        raise AkaError(f"secret variable(s) {missing} not set", fix="export them and resume")
    return {**arm.env, **{n: env[n] for n in arm.secret_env}}


def mcp_config(servers: Mapping[str, McpServer]) -> dict[str, Any]:
    """``{"mcpServers": ...}``: the JSON format of Claude Code ``--mcp-config`` and Cursor."""
    return {
        "mcpServers": {
            name: {"command": s.command, "args": list(s.args), "env": dict(s.env)}
            for name, s in sorted(servers.items())
        }
    }


def place_files(cas: ContentStore, arm: ResolvedArm, workspace: Path) -> bool:
    """Write the arm's files into ``workspace``; True if there were any."""
    for f in arm.files:
        dest = workspace / f.path
        if f.kind == "tree":
            dest.mkdir(parents=True, exist_ok=True)
            cas.materialize(f.digest, dest)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(cas.get(f.digest))
        dest.chmod(0o755 if f.executable else 0o644)
    return bool(arm.files)


def _memory_section(memory: MemoryConfig) -> str:
    scope = (
        "this arm's attempts, in order, and across runs"
        if memory.across_runs
        else ("this arm's attempts in this run, in order")
    )
    return (
        "## Memory\n\n"
        f"The directory `{memory.path}/` in the workspace persists across {scope}. Read it "
        "before you start; leave notes there for later attempts (what worked, what did not, "
        "numbers you measured). It is recorded, never evaluated."
    )


def arm_prompt(
    cas: ContentStore, arm: ResolvedArm, task: Task, *, device: str, eval_command: str | None
) -> str:
    """The full prompt of one attempt under this arm."""
    template = None if arm.prompt.template is None else cas.get(arm.prompt.template).decode()
    sections = list(arm.prompt.extra_sections)
    if arm.memory is not None:
        sections.append(_memory_section(arm.memory))
    return render_prompt(
        task, device=device, eval_command=eval_command, template=template, extra_sections=sections
    )


def _latest_memory(ledger: Ledger, run_id: str, memory: MemoryConfig) -> Envelope | None:
    found = ledger.events(
        run_id=None if memory.across_runs else run_id, types=["MemorySnapshotted"]
    )
    for env in reversed(found):
        p = env.payload
        if isinstance(p, ev.MemorySnapshotted) and p.key == memory.key and p.phase == "after":
            return env
    return None


def memory_before(
    ledger: Ledger, run_id: str, arm: ResolvedArm, workspace: Path, *, try_no: int
) -> ev.MemorySnapshotted | None:
    """Restore the latest memory into ``workspace``; the ``before`` event (None: no memory)."""
    if arm.memory is None:
        return None
    dest = workspace / arm.memory.path
    dest.mkdir(parents=True, exist_ok=True)
    latest = _latest_memory(ledger, run_id, arm.memory)
    if latest is not None:
        assert isinstance(latest.payload, ev.MemorySnapshotted)
        ledger.cas.materialize(latest.payload.tree, dest)
    return ev.MemorySnapshotted(
        try_no=try_no,
        phase="before",
        key=arm.memory.key,
        path=arm.memory.path,
        tree=ledger.cas.snapshot(dest),
        source_run=None if latest is None else latest.run_id,
        source_attempt=None if latest is None else latest.attempt_key,
    )


def memory_after(
    cas: ContentStore, arm: ResolvedArm, workspace: Path, *, try_no: int
) -> ev.MemorySnapshotted | None:
    """Snapshot the memory the agent left; the ``after`` event (None: no memory)."""
    if arm.memory is None:
        return None
    dest = workspace / arm.memory.path
    if not dest.is_dir():
        dest.mkdir(parents=True, exist_ok=True)
    return ev.MemorySnapshotted(
        try_no=try_no,
        phase="after",
        key=arm.memory.key,
        path=arm.memory.path,
        tree=cas.snapshot(dest),
    )


def arm_difference(
    cas: ContentStore,
    a: Iterable[str | None],
    b: Iterable[str | None],
    *,
    label: str = "B",
) -> dict[str, Any]:
    """What differs between the arms behind two sides of a comparison (``aka compare``).

    Args:
        cas: the content store holding the resolved arm blobs.
        a: the ``arm_digest`` of every attempt on side A (None where unknown).
        b: the same for side B.
        label: how the summary names side B's arm.

    Returns:
        :meth:`ArmDiff.to_dict` when each side ran one resolved arm; otherwise a dict
        with ``identical`` None and a summary saying why no single difference exists.
    """
    da, db = sorted({d for d in a if d}), sorted({d for d in b if d})

    def unknown(why: str) -> dict[str, Any]:
        return {"a": da, "b": db, "identical": None, "summary": why, "changes": []}

    if len(da) != 1 or len(db) != 1:
        return unknown(
            f"no single arm difference: side A ran {len(da)} arm configuration(s), side B {len(db)}"
        )
    try:
        arm_a, arm_b = load_arm(cas, da[0]), load_arm(cas, db[0])
    except (ValueError, LedgerError) as exc:  # a blob that is no resolved arm, or missing
        return unknown(f"arms not comparable: {type(exc).__name__}")
    return diff_arms(arm_a, arm_b, digests=(da[0], db[0]), label=label).to_dict()
