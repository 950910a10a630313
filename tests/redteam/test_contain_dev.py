"""``/dev`` is read-only to a contained process, and its device nodes still open.

``/dev`` is one mount shared by every process of the machine: a candidate that could
rename ``/dev/null`` or a GPU's node there would break every process started after it,
the clean baseline timing that checks its own among them (a timing that fails leaves its
detector silent). A read-only mount stops that; device nodes stay writable on one (the
kernel exempts them), and where a platform does not, ``/dev`` is given its writes back
and the containment note says so rather than leaving the evaluation without devices.
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
