# ruff: noqa
# mypy: ignore-errors
"""Escape through ``subprocess.Popen(start_new_session=True)``: a new session and group.

The child is a fresh interpreter, detached from the evaluation's session, process group
and pipes; it sleeps past the evaluation and then writes a marker file.
"""
import os
import subprocess
import sys

# The evaluation's own working folder: the one place the host still sees after it ends
# (the temporary folder is a private tmpfs that dies with the evaluation).
MARKER = os.path.join(os.getcwd(), "escaped")
_started = []


def scale(x):
    if not _started:
        code = f"import time; time.sleep(8); open({MARKER!r}, 'w').write('escaped')"
        _started.append(subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, close_fds=True))
    return x * 2 + 1
