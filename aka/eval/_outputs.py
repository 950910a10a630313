"""The folder where the candidate process leaves its outputs for the checker process."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Candidate outputs go to a memory-backed directory when it has this much room.
SHM_ENV = "AKA_EVAL_SHM"
SHM_MIN_FREE = 16 << 30
SHM_PREFIX = "aka-out-"


@contextlib.contextmanager
def output_dir(root: Path) -> Iterator[Path]:
    """Where the candidate process leaves its outputs for the checker.

    At GPU sizes an evaluation hands over gigabytes (every case, rewrite and timed
    output), so a memory-backed ``/dev/shm`` with room to spare is used when there is one
    (removed afterwards, and swept if its evaluator dies first: :func:`sweep_orphans`);
    otherwise a new folder in ``root`` (removed afterwards too). The candidate's code may
    not open it either way (the child denies it as it denies the evaluation root).
    """
    shm = Path(os.environ.get(SHM_ENV, "/dev/shm"))
    try:
        st = os.statvfs(shm)
        roomy = st.f_bavail * st.f_frsize >= SHM_MIN_FREE and os.access(shm, os.W_OK)
    except OSError:
        roomy = False
    if not roomy:  # a folder of its own: the processes of one evaluation run one after
        # another in its root (the held-out check after the tuning shapes), and the core
        # names its files afresh in each, refusing one that exists
        out = Path(tempfile.mkdtemp(prefix="out-", dir=root))
    else:
        tag = _owner_tag()
        if tag is not None:
            sweep_orphans(shm, tag)
        out = Path(tempfile.mkdtemp(prefix=f"{SHM_PREFIX}{tag or 'x'}-{os.getpid()}-", dir=shm))
    try:
        yield out
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _owner_tag() -> str | None:
    """This process's pid namespace, so a sweep only judges pids it can see."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return None


def sweep_orphans(shm: Path, tag: str) -> list[Path]:
    """Remove output folders left by evaluators that died (a SIGKILLed worker).

    Folders are named ``aka-out-<pid namespace>-<pid>-...``; one whose evaluator is in
    this pid namespace and no longer alive is removed (a reused pid only delays it). The
    outputs are gigabytes of memory on ``/dev/shm``, so a long run must not leak them.
    """
    removed = []
    for folder in shm.glob(f"{SHM_PREFIX}{tag}-*-*"):
        try:
            pid = int(folder.name[len(SHM_PREFIX) + len(tag) + 1 :].split("-", 1)[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        except (ValueError, PermissionError):
            continue
    return removed
