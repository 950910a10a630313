"""Native code a candidate loaded, judged by what its task's backend allows.

A Triton task asks for a Triton kernel, and ``operators: plumbing`` charges every library
operator that computes: what is left to a candidate that wants the answer some other way
is native code of its own (a ``torch.utils.cpp_extension.load_inline`` module, inductor's
C++ kernels, a library written and loaded through ``ctypes``). None of that raises an
operator or launches anything the launch counter sees, and every Python-level sign of it
(the audit hook, the static scan) is a tripwire the candidate can undo.

Two things stop it from outside candidate Python. The candidate process mounts every
folder it can write but Triton's cache ``noexec`` (:func:`aka.eval._contain.hide`), so
the kernel refuses to map a library made there; and the sealed core lists the files
mapped executable after it was created (``seal.cpp``, ``note_code``), which
:func:`flags` judges here: a library made during the evaluation, or lying where the
candidate could have written it, is ``native_code`` unless it is Triton's own launcher,
which Triton compiles into its cache at a kernel's first launch on a GPU. Backends whose
candidates may build native code (CUDA extensions; ``torch.compile`` on a PyTorch task,
whose CPU kernels are C++) get neither.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aka.backends import backend

__all__ = ["environment", "flags", "refused", "triton_launcher", "writable_roots"]

# Triton's launcher modules: ``__triton_launcher`` (one per kernel signature, Triton up to
# 3.6), ``cuda_utils`` / ``hip_utils`` (the driver's), each ``<name><EXT_SUFFIX>``.
_LAUNCHER = re.compile(r"(__triton_launcher|cuda_utils|hip_utils)(\.[\w.-]+)?\.so")


def triton_launcher(path: str) -> bool:
    """Whether ``path`` is where Triton keeps a launcher it compiled: a launcher's file name
    in a folder of a Triton cache (a folder named for ``triton`` above it)."""
    p = Path(path)
    return bool(_LAUNCHER.fullmatch(p.name)) and any("triton" in d for d in p.parent.parts)


def writable_roots() -> tuple[Path, ...]:
    """Where a candidate process can leave a file that is not new when a later one maps
    it, besides its evaluation's folder: the kernel caches warm workers keep per
    candidate tree, the temporary folders (shared between processes where the evaluation
    is not contained)."""
    from aka.eval._warm import CACHE_ROOT

    places = (CACHE_ROOT / "kernels", Path(tempfile.gettempdir()), Path("/dev/shm"))
    return tuple(Path(os.path.realpath(p)) for p in places)  # as the kernel names a mapping


def environment() -> tuple[Path, ...]:
    """The evaluator's interpreter and import path: packages installed under a temporary
    folder (a ``pip install --target /tmp/site``) are the environment, not the
    candidate's."""
    places = [*sys.path, sys.prefix, sys.base_prefix, sys.exec_prefix]
    return tuple(Path(os.path.realpath(p)) for p in places if p and os.path.isdir(p))


def flags(
    backend_name: str,
    code: Sequence[dict[str, Any]],
    roots: Sequence[Path],
    *,
    gpu: bool,
    env: Sequence[Path] = (),
    own: Path | None = None,
) -> list[dict[str, str]]:
    """``native_code`` for each library the core saw mapped executable after it started
    that the candidate could have made: built during the evaluation (``fresh``), lying in
    its evaluation's folder ``own``, or under ``roots`` but not in ``env``. Nothing for a
    backend whose candidates build native code. Triton's launchers are let be on a
    ``gpu`` (the interpreter builds none)."""
    if backend(backend_name).builds_native:
        return []
    mine = Path(os.path.realpath(own)) if own else None
    out = []
    for item in code:
        path = str(item.get("path", ""))
        shared = any(_under(path, r) for r in roots) and not any(_under(path, e) for e in env)
        made = bool(item.get("fresh")) or shared or (mine is not None and _under(path, mine))
        if made and not (gpu and triton_launcher(path)):
            why = "made during the evaluation" if item.get("fresh") else "in a writable folder"
            out.append({"flag": "native_code", "evidence": (
                f"{path} ({why}) was loaded as native code; a {backend_name} task's "
                "kernel must compute in its backend, not in a library of its own"
            )})  # fmt: skip
    return out


# What the dynamic loader says when the kernel refuses to map a file on a noexec mount.
REFUSED = "failed to map segment from shared object"


def refused(errors: Sequence[str | None]) -> list[dict[str, str]]:
    """``native_code`` where the candidate's import or a call failed because the loader was
    refused a library in a ``noexec`` folder: the refusal is the boundary; this says
    why the candidate failed."""
    for error in errors:
        if error and REFUSED in error:
            return [{"flag": "native_code", "evidence": (
                "loading a library from a folder the candidate can write was refused "
                f"(mounted noexec): {error[:300]}"
            )}]  # fmt: skip
    return []


def _under(path: str, root: Path) -> bool:
    base = str(root).rstrip("/") + "/"
    return path.startswith(base)
