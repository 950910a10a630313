# ruff: noqa
# mypy: ignore-errors
"""Escape through ``subprocess.Popen(start_new_session=True)``: a new session and group.

The child is a fresh interpreter, detached from the evaluation's session, process group
and pipes; it sleeps past the evaluation and then writes a marker file.
"""
import os
import subprocess
import sys

# The candidate tree's own kernel cache: the one folder its processes may write that the
# host still sees after it ends (every other mount is read-only; the temporary and working
# folders are private tmpfs that die with the evaluation).
MARKER = os.path.join(os.environ.get("TRITON_CACHE_DIR") or os.getcwd(), "escaped")
_started = []


def scale(x):
    if not _started:
        code = f"import time; time.sleep(8); open({MARKER!r}, 'w').write('escaped')"
        _started.append(subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, close_fds=True))
    return x * 2 + 1
