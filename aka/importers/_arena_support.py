"""What aka can run of an AgentKernelArena task: its task type and its platform.

Each verdict takes a read :class:`~aka.importers._arena_config.ArenaConfig` and gives a
reason (with a fix) or None. A type close to a known one is refused rather than
imported as whatever its last word says; AMD-only kernels, image and repository tasks
are refused naming what to write instead; a platform this machine lacks is no refusal
but the task's ``skip_reason``, so the task is there for the machine that has it.
"""

from __future__ import annotations

import difflib

from aka.importers._arena_config import ArenaConfig, PlatformSupport

SUPPORTED = {None, "", "supported", "ok", "enabled", "available", "active"}
AMD_ONLY = ("hip", "flydsl")
"""Task types whose kernels are written for AMD GPUs (hip2hip, torch2hip, flydsl2flydsl, ...)."""

KNOWN_TYPES = (
    "triton2triton", "torch2triton", "instruction2triton", "cuda2cuda", "torch2cuda",
    "cuda2triton", "torch2torch", "hip2hip", "torch2hip", "cuda2hip", "flydsl2flydsl",
    "torch2flydsl", "triton2flydsl", "repository", "image_kernel",
)  # fmt: skip
"""AgentKernelArena's task types (its task folders and its own config check): a type one
letter off one of them is a typo, not a new kind of task."""


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
