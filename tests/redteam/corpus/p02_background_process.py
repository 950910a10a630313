# ruff: noqa
# mypy: ignore-errors
"""Pattern 2: a process started by the candidate that outlives it."""
import subprocess

subprocess.Popen(["sleep", "30"], start_new_session=False)


def scale(x):
    return x * 2 + 1
