"""A chatty agent's cost: peak memory of ``aka run`` and ledger size for N MiB of stdout.

Usage (from the repository root, in the project's virtual environment)::

    python3 tools/chatty_bench.py --mib 1024 [--out chatty.json]

It copies the fixture task ``torch/ops/affine`` into a temporary folder and runs one
``aka run`` (CPU) whose ``command`` agent prints ``--mib`` MiB to stdout in lines of 256
bytes, under ``/usr/bin/time -v`` when present. It reports the peak resident memory of
the largest process of the run (``Maximum resident set size``: the children are waited
for, so the agent and the evaluator count when larger), the peak of ``aka run`` alone
(sampled from ``/proc`` every 50 ms; the agent's own memory is not in it), the ledger's
size on disk and the wall time. The transcript cap (64 MiB by default) is what keeps the
ledger small; the parser streams, which keeps memory flat.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LINE = 256  # bytes per printed line, newline included

AGENT = """\
import sys
line = b"z" * {width} + b"\\n"
block = line * 4096
out = sys.stdout.buffer
for i in range({blocks}):
    out.write(block)
out.flush()
"""


def _rss_kib(pid: int) -> int:
    try:
        for row in Path(f"/proc/{pid}/status").read_text().splitlines():
            if row.startswith("VmRSS:"):
                return int(row.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=1024, help="MiB the agent prints (default 1024)")
    ap.add_argument("--out", type=Path, help="also write the numbers as JSON here")
    args = ap.parse_args()
    blocks = max(1, args.mib * (1 << 20) // (LINE * 4096))
    with tempfile.TemporaryDirectory(prefix="aka-chatty-") as tmp_s:
        tmp = Path(tmp_s)
        shutil.copytree(ROOT / "tests" / "fixtures" / "tasks", tmp / "tasks")
        (tmp / "chatty.py").write_text(AGENT.format(width=LINE - 1, blocks=blocks))
        cfg = {
            "label": "chatty",
            "tasks": ["torch/ops/affine"],
            "tasks_root": str(tmp / "tasks"),
            "arms": [
                {
                    "name": "chatty",
                    "agent": "command",
                    "options": {"command": [sys.executable, str(tmp / "chatty.py")]},
                }
            ],
            "device": "cpu",
            "timing": {"max_time_s": 0.2, "min_samples": 5},
        }
        (tmp / "run.yaml").write_text(yaml.safe_dump(cfg))
        ledger = tmp / "ledger"
        cmd = [sys.executable, "-m", "aka.cli", "run", str(tmp / "run.yaml")]
        cmd += ["--ledger", str(ledger), "--run-id", "chatty"]
        timer = shutil.which("time") or (
            "/usr/bin/time" if Path("/usr/bin/time").exists() else None
        )
        if timer:
            cmd = [timer, "-v", *cmd]
        env = dict(os.environ, AKA_KEY_DIR=str(tmp / "keys"))
        start = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        peak = [0]

        def sample() -> None:
            target = proc.pid
            while proc.poll() is None:
                if timer:  # the child of `time` is `aka run`
                    kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
                    try:
                        ids = kids.read_text().split()
                        target = int(ids[0]) if ids else target
                    except OSError:
                        pass
                peak[0] = max(peak[0], _rss_kib(target))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, err = proc.communicate()
        wall = time.monotonic() - start
        sampler.join()
        text = err.decode(errors="replace")
        if proc.returncode != 0:
            sys.stderr.write(text[-4000:])
            return proc.returncode
        largest = None
        for row in text.splitlines():
            if "Maximum resident set size" in row:
                largest = int(row.rsplit(":", 1)[1])
        result = {
            "agent_stdout_mib": blocks * LINE * 4096 / (1 << 20),
            "aka_run_peak_rss_mib": round(peak[0] / 1024, 1),
            "largest_process_peak_rss_mib": round(largest / 1024, 1) if largest else None,
            "ledger_bytes": _du(ledger),
            "wall_s": round(wall, 1),
        }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
