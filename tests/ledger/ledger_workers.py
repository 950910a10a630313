"""Child-process bodies for the crash and concurrency tests (importable by forkserver)."""

from __future__ import annotations

import os
import random

import pyarrow as pa
from ledger_vocab import REGISTRY, Counted, Stored

from aka_ledger import Ledger

# pyarrow imports pandas (when installed) on its first array; do it here, once, so the
# forkserver's children start warm and a kill lands while they append.
pa.array([0])


def crash_writer(
    root: str, writer_id: str, ack_path: str, base: int, seed: int, ready: str
) -> None:
    """Append forever (durable, batched, blobs, seals) and ack each append.

    An ack line is written only after the append returned, so every acked key must
    survive a SIGKILL at any moment: durable appends are fsynced, and every append has
    reached the operating system before it returns.
    """
    rng = random.Random(seed)
    ledger = Ledger.open(root, registry=REGISTRY, writer_id=writer_id, seal_rows=40)
    ack = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    open(ready, "w").close()
    key = base
    while True:
        roll = rng.random()
        if roll < 0.5:
            ledger.append(Counted(key=f"k{key}", by=1), run_id="r", durable=True)
            os.write(ack, f"k{key}\n".encode())
            key += 1
        elif roll < 0.8:
            n = rng.randint(1, 30)
            ledger.append_many([(Counted(key=f"k{key + j}", by=1), "r", None) for j in range(n)])
            # not fsynced, but written: it must survive the process being killed
            os.write(ack, "".join(f"k{key + j}\n" for j in range(n)).encode())
            key += n
        elif roll < 0.93:
            digest = ledger.cas.put(rng.randbytes(rng.choice([10, 5000, 300_000])))
            ledger.append(Stored(digest=digest, note=f"k{key}"), run_id="r", durable=True)
            os.write(ack, f"k{key}\n".encode())
            key += 1
        else:
            ledger.seal()


def steady_writer(root: str, writer_id: str, total: int, seed: int, hold: str = "") -> None:
    """Append exactly ``total`` events in random batches, some durable, sealing often.

    With ``hold``, the writer stops halfway until that file exists (at most two minutes),
    so the test's compaction surely runs while every writer is alive with sealed
    segments on disk, however slowly a loaded machine starts the processes.
    """
    import time

    rng = random.Random(seed)
    ledger = Ledger.open(root, registry=REGISTRY, writer_id=writer_id, seal_rows=1500)
    done = 0
    while done < total:
        if hold and done >= total // 2:
            deadline = time.monotonic() + 120
            while not os.path.exists(hold) and time.monotonic() < deadline:
                time.sleep(0.01)
            hold = ""
        n = min(rng.randint(1, 400), total - done)
        items = [(Counted(key=writer_id, by=done + j), "r", None) for j in range(n)]
        ledger.append_many(items, durable=rng.random() < 0.2)
        done += n
    ledger.close()


def zygote() -> None:
    """Fork a warm child per request: one line ``crash_writer`` args (JSON) in, its pid out.

    Starting a fresh interpreter per crash trial would cost most of the test's time;
    forking this already-importing process costs milliseconds. Children are reaped
    automatically (SIGCHLD ignored); the test kills them by pid.
    """
    import json
    import signal
    import sys

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for line in sys.stdin:
        args = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                crash_writer(*args)
            finally:
                os._exit(1)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()
