"""``/dev`` is read-only to a contained process, and its device nodes still open.

``/dev`` is one mount shared by every process of the machine: a candidate that could
rename ``/dev/null`` or a GPU's node there would break every process started after it,
the clean baseline timing that checks its own among them (a timing that fails leaves its
detector silent). A read-only mount stops that; device nodes stay writable on one (the
kernel exempts them), and where a platform does not, ``/dev`` is given its writes back
and the containment note says so rather than leaving the evaluation without devices.

The folders a contained process can write hold no code it could load (``noexec``), but
the one cache it is given for that (Triton's, on a GPU), which stays executable even where
a platform refuses its own mount.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from aka.eval import _contain

PROBE = Path(f"/dev/aka-test-probe-{os.getpid()}")

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0,
    reason="mount namespaces need Linux and root",
)


def _in_child(body: Callable[[], dict[str, object]]) -> dict[str, object]:
    """``body`` run in a forked child (its mounts die with it); what it returned."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            out = body()
        except BaseException as exc:  # reported to the parent
            out = {"error": repr(exc)}
        os.write(write, json.dumps(out).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        data = f.read()
    os.waitpid(pid, 0)
    return dict(json.loads(data))


def _errno(call: Callable[[], object]) -> str:
    try:
        call()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "done"


def _contained_then_try() -> dict[str, object]:
    note = _contain.hide([], private=(tempfile.gettempdir(), "/dev/shm"), read_only=True)
    mode = os.stat("/dev/null").st_mode & 0o7777
    out: dict[str, object] = {
        "note": note,
        "mkdir": _errno(lambda: os.mkdir(PROBE)),
        # The node's own mode (the same as it has: nothing changes where it is allowed).
        "chmod": _errno(lambda: os.chmod("/dev/null", mode)),
    }
    with open("/dev/null", "w") as null:  # what subprocess.DEVNULL and compilers do
        out["null"] = null.write("written")
    return out


def _contained() -> tuple[dict[str, object], bool]:
    """What a contained child got, and whether its probe folder is left in ``/dev``."""
    try:
        got = _in_child(_contained_then_try)
        made = PROBE.exists()
    finally:
        if PROBE.is_dir():
            PROBE.rmdir()
    if str(got.get("note", "")).startswith("not contained"):
        pytest.skip(f"no containment here: {got['note']}")
    return got, made


def test_a_contained_process_changes_nothing_in_dev_and_still_writes_its_nodes() -> None:
    got, made = _contained()
    assert got.get("mkdir") == "EROFS" and got.get("chmod") == "EROFS", got
    assert got.get("null") == len("written"), got
    assert not made


def test_where_device_nodes_stop_opening_dev_keeps_its_writes_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A platform that applies a read-only mount to device nodes would leave a candidate's
    process without ``/dev/null`` or its GPU: ``/dev`` is made writable again."""
    calls: list[int] = []
    real = _contain._openable_devices

    def refusing_after_remount() -> set[str]:
        calls.append(1)
        return real() if len(calls) == 1 else set()  # nothing opens once /dev is read-only

    monkeypatch.setattr(_contain, "_openable_devices", refusing_after_remount)
    got, made = _contained()
    assert "left writable" in str(got["note"]) and "/dev (read-only refused /dev/" in str(
        got["note"]
    ), got
    assert got.get("mkdir") == "done" and made, got  # writable again, as before


LIBM = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6")
             if Path(p).exists()), None)  # fmt: skip


def _loads(path: str) -> str:
    """Whether the dynamic loader maps a copy of the system's libm placed at ``path``."""
    import ctypes
    import shutil

    assert LIBM is not None
    shutil.copy(LIBM, path)
    try:
        ctypes.CDLL(path)
    except OSError as exc:
        return "refused" if "failed to map segment" in str(exc) else repr(exc)
    return "loaded"


def _noexec_but_cache() -> dict[str, object]:
    tmp = tempfile.gettempdir()
    cache = os.path.join(tmp, "aka-test-cache")  # Triton's cache of a cold GPU evaluation
    note = _contain.hide([], private=(tmp, "/dev/shm"), read_only=True, executable=(cache,))
    return {
        "note": note,
        "tmp": _loads(os.path.join(tmp, "mine.so")),
        "shm": _loads("/dev/shm/mine.so"),
        "cache": _loads(os.path.join(cache, "__triton_launcher.so")),
    }


@pytest.mark.skipif(LIBM is None, reason="no libm at a known path")
def test_writable_folders_hold_no_code_but_the_executable_cache() -> None:
    got = _in_child(_noexec_but_cache)
    if str(got.get("note", "")).startswith("not contained"):
        pytest.skip(f"no containment here: {got['note']}")
    assert "writable folders noexec" in str(got["note"]), got
    assert got["tmp"] == got["shm"] == "refused" and got["cache"] == "loaded", got


@pytest.mark.skipif(LIBM is None, reason="no libm at a known path")
def test_where_the_cache_s_own_mount_is_refused_its_folder_keeps_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A platform that refuses a tmpfs inside the private temporary folder would leave
    Triton unable to load its launchers: that folder is made executable again, and the
    note says so."""
    real = _contain._mount

    def refusing(src: str | None, target: str, *rest: object) -> int:
        if target.endswith("aka-test-cache"):
            return -1
        return real(src, target, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(_contain, "_mount", refusing)
    got = _in_child(_noexec_but_cache)
    if str(got.get("note", "")).startswith("not contained"):
        pytest.skip(f"no containment here: {got['note']}")
    assert "noexec refused: " in str(got["note"]) and "aka-test-cache" in str(got["note"]), got
    assert got["cache"] == "loaded" and got["shm"] == "refused", got
