"""The task.yaml blocks that make a task a command, repository or image task.

A ``commands`` block makes a task judged by its own scripts; a ``repository`` or an
``image`` block (each with ``commands``) says where its sources are fetched from when
the task is staged. :class:`aka.tasks.TaskSpec` holds them; the kinds that act on them
are in :mod:`aka.kinds`. Unknown keys are rejected.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["SOURCE_LOCK", "CommandSpec", "ImageSpec", "RepositorySpec"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommandSpec(_Strict):
    """A command-driven task (AgentKernelArena folders): its own scripts judge and time it.

    Commands run in a fresh copy of the task folder holding the candidate's editable
    files; ``performance`` writes ``report`` (a JSON list of ``{test_case_id,
    execution_time_ms, params}``). Evaluation lives in :mod:`aka.kinds._command`.
    """

    compile: str = Field(description="Shell command that builds the candidate (exit 0 = ok).")
    correctness: str = Field(description="Shell command that checks it (exit 0 = correct).")
    performance: str = Field(description="Shell command that times it and writes `report`.")
    report: str = Field(
        default="build/performance_report.json",
        description="Task-relative path of the performance report the command writes.",
    )
    timeout_s: float = Field(default=1800.0, gt=0, description="Limit per command, seconds.")
    timing_gate: Literal["command", "helper"] = Field(
        default="command",
        description="What runs with the device to itself: the whole performance command "
        "(`command`), or only the timed loops of aka's timing helper, which asks for the "
        "device itself (`helper`, set by `aka tasks import aka` where it placed the helper; "
        "a run that never asks is timed again as a whole).",
    )
    skip_reason: str | None = Field(
        default=None,
        description="Why the task cannot run here (e.g. it needs another GPU architecture); "
        "set by importers from platform_support.",
    )


class RepositorySpec(_Strict):
    """A repository task: the workspace is a pinned checkout of an upstream repository.

    The checkout is resolved once, at run start, and stored as a tree with the task, so
    every attempt and every resume of a run sees identical code (see :mod:`aka.kinds._repository`).
    """

    url: str = Field(description="Git URL or local path of the repository.")
    commit: str | None = Field(
        default=None, description="Pinned commit (full or abbreviated SHA, or a tag)."
    )
    branch: str | None = Field(
        default=None,
        description="Branch to resolve once at run start when no commit is pinned; the "
        "resolved commit is recorded in the stored tree.",
    )
    subdir: str = Field(default="", description="Part of the repository to check out.")

    @model_validator(mode="after")
    def _pinned(self) -> RepositorySpec:
        if not self.commit and not self.branch:
            raise ValueError(
                "repository needs a pinned `commit` (or a `branch` resolved once at run start)"
            )
        return self


class ImageSpec(_Strict):
    """An image task: the workspace is seeded from a path inside a container image.

    The seed is copied out at run start and stored as a tree; evaluation runs the task's
    commands inside the image (see :mod:`aka.kinds._image`).
    """

    ref: str = Field(description="Image reference, e.g. vllm/vllm-openai:v0.6.3.")
    digest: str | None = Field(
        default=None,
        description="Expected image id or repository digest (sha256:...); checked at run start.",
    )
    path: str = Field(description="Absolute path inside the image to seed the workspace from.")

    @field_validator("path")
    @classmethod
    def _absolute(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError("must be an absolute path inside the image, e.g. /opt/project")
        return v


SOURCE_LOCK = ".aka-source.json"
"""Written at the root of a repository or image task's stored tree: what was checked out."""
