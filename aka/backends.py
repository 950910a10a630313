"""The backend table: what each kind of kernel a task may ask for needs, in one place.

A task's ``backend`` (``triton``, ``cuda``, ``torch``) names the kind of kernel the
candidate must launch. Everything that differs by backend is a field of its
:class:`Backend` row here, never a comparison with the name elsewhere: the suffixes an
entry file may have, the modules an evaluation needs, how the kernel is compiled, the
devices it can run on, and how the candidate process proves that a kernel of this
backend ran (Triton's launcher counted, or the CUDA kernels listed by the profiler).

Adding a backend is one row in :data:`BACKENDS` (and, when the candidate process must
prove a launch in a new way, that check in ``aka/eval/_kernels.py``). This module
imports nothing beyond the standard library: the candidate process reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BACKENDS", "Backend", "backend", "entry_suffixes"]


@dataclass(frozen=True)
class Backend:
    """What one backend needs, and how a launch of it is proven."""

    name: str
    """The value of a task's ``backend`` field."""
    label: str
    """How prompts and reports name it (``Triton``)."""
    suffixes: tuple[str, ...]
    """Suffixes the task's entry file may have (the callable is always Python-loaded)."""
    requires: tuple[str, ...]
    """Modules an evaluation imports for it (what ``requires`` of a new task lists)."""
    compile_step: str
    """How the candidate's kernel is built: compiled in the candidate process, on first use."""
    devices: tuple[str, ...]
    """Device kinds it can run on (``cpu``: through the Triton interpreter for Triton)."""
    must_launch: bool
    """Whether falling back to PyTorch or a library fails (the prompt says so)."""
    counts_launches: bool = False
    """The candidate process hooks Triton's launcher: no launch, or output unchanged with
    every launch a no-op, is flagged."""
    lists_device_kernels: bool = False
    """On a GPU the candidate process lists the kernels that ran: only library kernels is
    flagged."""
    builds_native: bool = False
    """Candidates may build and load native code of their own (a torch extension,
    inductor's C++ kernels). Otherwise every folder the candidate can write but Triton's
    cache is ``noexec``, and a library it made is ``native_code``
    (:mod:`aka.eval._foreign`)."""


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            name="triton",
            label="Triton",
            suffixes=(".py",),
            requires=("triton",),
            compile_step="triton.jit compiles each kernel at its first launch",
            devices=("cuda", "cpu"),
            must_launch=True,
            counts_launches=True,
        ),
        Backend(
            name="cuda",
            label="CUDA",
            suffixes=(".py", ".cu", ".cpp"),
            requires=("torch.utils.cpp_extension",),
            compile_step="torch.utils.cpp_extension builds the sources when the entry imports",
            devices=("cuda",),
            must_launch=True,
            lists_device_kernels=True,
            builds_native=True,
        ),
        Backend(
            name="torch",
            label="PyTorch",
            suffixes=(".py",),
            requires=(),
            compile_step="none (eager PyTorch)",
            devices=("cuda", "cpu"),
            must_launch=False,
            builds_native=True,  # torch.compile is PyTorch: inductor loads C++ on the CPU
        ),
    )
}
"""Every backend a task may name, by name."""


def backend(name: str) -> Backend:
    """The row for ``name``.

    Raises:
        KeyError: no such backend; the message lists the known ones.
    """
    try:
        return BACKENDS[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r}; known: {sorted(BACKENDS)}") from None


def entry_suffixes() -> tuple[str, ...]:
    """Every suffix some backend allows for an entry file."""
    return tuple(sorted({s for b in BACKENDS.values() for s in b.suffixes}))
