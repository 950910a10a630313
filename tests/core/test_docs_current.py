"""Generated docs stay in step with the code, and every command has help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_config_docs_are_current() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_config_docs.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_command_has_help(cli) -> None:
    from aka.cli._app import _load, app

    _load()
    import typer.main

    root = typer.main.get_command(app)
    stack = [([], root)]
    seen = 0
    while stack:
        path, cmd = stack.pop()
        res = cli(*path, "--help")
        assert res.code == 0, (path, res.err)
        assert (cmd.help or "").strip() or not path, f"`aka {' '.join(path)}` has no help text"
        seen += 1
        for name, sub in getattr(cmd, "commands", {}).items():
            stack.append(([*path, name], sub))
    assert seen > 15
