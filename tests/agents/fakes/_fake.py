"""Behaviour shared by the fake agent CLIs (``claude``, ``codex``, ``cursor-agent``, ``mini``).

A fake replays ``<name>.jsonl`` (a stream in the CLI's documented format) and then does
what ``FAKE_SCENARIO`` asks:

- ``ok``: replay and exit 0;
- ``malformed``: replay with broken lines mixed in;
- ``large``: ``FAKE_LINES`` big lines and one line of ``FAKE_HUGE`` bytes, then replay;
- ``fail``: replay half, complain on stderr, exit 3;
- ``hang``: start a child in the same process group, write both pids to ``FAKE_PIDS``,
  then sleep forever (``FAKE_IGNORE_TERM=1``: both ignore SIGTERM);
- ``orphan``: start a grandchild that keeps stdout open and outlives the fake, replay, exit 0;
- ``setsid``: start a grandchild in a new session (a daemon), replay, exit 0.

``FAKE_ARGV`` names a file that receives the argv as JSON; ``FAKE_ENV`` one that receives
the environment variables an adapter may set (``CLAUDE_*``, ``AKA_*``, ``MSWEA_*``, ``OPENAI_*``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SLEEPER = "import signal, sys, time\nif sys.argv[1] == '1': signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(120)"
BROKEN = [
    '{"type": "assistant", "message": {"content": [',
    "plain text progress line",
    "[1, 2, 3]",
    '{"type": "mystery", "x": 1}',
    '{"type":"assistant","message":{"content":"not-a-list"}}',
]


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _sleeper(*, new_session: bool = False, keep_stdout: bool = True) -> int:
    ignore = os.environ.get("FAKE_IGNORE_TERM", "0")
    out = None if keep_stdout else subprocess.DEVNULL
    child = subprocess.Popen(
        [sys.executable, "-c", SLEEPER, ignore],
        stdout=out,
        stderr=out,
        start_new_session=new_session,
    )
    return child.pid


def _write_pids(*pids: int) -> None:
    if os.environ.get("FAKE_PIDS"):
        Path(os.environ["FAKE_PIDS"]).write_text(json.dumps(list(pids)))


def _meta(name: str, argv: list[str]) -> bool:
    """Answer --version and login checks; True if the call was one of those."""
    if argv[:1] == ["--version"]:
        _say(
            {
                "claude": "2.0.14 (Claude Code)",
                "codex": "codex-cli 0.46.0",
                "cursor-agent": "2025.10.02-fake",
            }.get(name, "1.17.0")
        )
        return True
    logged_in = os.environ.get("FAKE_AUTH", "ok") == "ok"
    if argv[:2] == ["login", "status"] or argv[:1] == ["status"]:
        _say("Logged in using ChatGPT" if logged_in else "Not logged in")
        sys.exit(0 if logged_in else 1)
    return False


def _mini_trajectory(argv: list[str]) -> None:
    if "--output" in argv:
        out = Path(argv[argv.index("--output") + 1])
        out.write_text((HERE / "mini_trajectory.json").read_text())


def main(name: str) -> None:
    argv = sys.argv[1:]
    if _meta(name, argv):
        return
    if os.environ.get("FAKE_ARGV"):
        Path(os.environ["FAKE_ARGV"]).write_text(json.dumps(argv))
    if os.environ.get("FAKE_ENV"):
        seen = {
            k: v
            for k, v in os.environ.items()
            if k.startswith(("CLAUDE_", "AKA_", "MSWEA_", "OPENAI_"))
        }
        Path(os.environ["FAKE_ENV"]).write_text(json.dumps(seen))
    scenario = os.environ.get("FAKE_SCENARIO", "ok")
    stream = HERE / f"{name}.jsonl"
    lines = (
        stream.read_text().splitlines()
        if stream.exists()
        else ["mini-swe-agent: step 1", "mini-swe-agent: step 2"]
    )
    if name == "mini":
        _mini_trajectory(argv)
    if scenario == "hang":
        if os.environ.get("FAKE_IGNORE_TERM") == "1":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _say(lines[0])
        _write_pids(os.getpid(), _sleeper())
        while True:
            time.sleep(1)
    if scenario == "malformed":
        mixed = []
        for i, line in enumerate(lines):
            mixed.append(line)
            if i < len(BROKEN):
                mixed.append(BROKEN[i])
        lines = mixed
    if scenario == "large":
        filler = json.dumps({"type": "filler", "pad": "x" * 1000})
        for _ in range(int(os.environ.get("FAKE_LINES", "0"))):
            sys.stdout.write(filler + "\n")
        _say('{"type": "huge", "pad": "' + "y" * int(os.environ.get("FAKE_HUGE", "0")) + '"}')
    if scenario == "orphan":
        _write_pids(_sleeper())
    if scenario == "setsid":
        _write_pids(_sleeper(new_session=True, keep_stdout=False))
    if scenario == "fail":
        for line in lines[: len(lines) // 2]:
            _say(line)
        sys.stderr.write("error: 429 rate limited\n")
        sys.exit(3)
    for line in lines:
        _say(line)
