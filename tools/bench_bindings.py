"""What holding every library binding costs an evaluation process of a warm parent.

The parent imports what the zygote imports and takes the bindings
(:func:`aka.eval._libstate.prime`); a forked child, as an evaluation process, imports a
few modules more, then takes its view (:func:`~aka.eval._libstate.bind_library`) and
compares after (:func:`~aka.eval._libstate.rebound_since`), once with Python's look-ups
and once with the sealed core's. Each child is fresh, so each pays the copy-on-write of
whatever it touches.

    python tools/bench_bindings.py [--device cpu|cuda] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def _child(way: str, device: str, pipe: int) -> None:
    from aka.eval import _libstate, _native

    core = _native.load(str(_native.ensure_built(device)))
    import scipy.special  # noqa: F401  # modules the parent did not load

    moved = core.moved_bindings if way == "core" else _libstate._moved
    t0 = time.perf_counter()
    held = _libstate.bind_library(moved)
    t1 = time.perf_counter()
    found = _libstate.rebound_since(held, lambda f: False, moved)
    t2 = time.perf_counter()
    row = {"way": way, "bind_s": t1 - t0, "compare_s": t2 - t1, "entries": len(held),
           "found": found}  # fmt: skip
    os.write(pipe, json.dumps(row).encode())
    os._exit(0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    from aka.eval import _libstate, _native, _zygote

    _native.ensure_built(args.device)
    _zygote.preload()  # primes the bindings too
    t0 = time.perf_counter()
    _libstate.prime()
    parent_s = time.perf_counter() - t0
    rows = []
    for _ in range(args.repeat):
        for way in ("python", "core"):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                _child(way, args.device, w)
            os.close(w)
            data = b""
            while chunk := os.read(r, 65536):
                data += chunk
            os.close(r)
            os.waitpid(pid, 0)
            rows.append(json.loads(data))
    print(f"python {sys.version.split()[0]}, {len(sys.modules)} modules in the parent, "
          f"prime {parent_s * 1e3:.0f} ms")  # fmt: skip
    for way in ("python", "core"):
        mine = [r for r in rows if r["way"] == way]
        bind = statistics.median(r["bind_s"] for r in mine) * 1e3
        comp = statistics.median(r["compare_s"] for r in mine) * 1e3
        print(f"{way:6s} child: take {bind:.0f} ms, compare {comp:.0f} ms "
              f"({mine[0]['entries']} namespaces; found {mine[0]['found']})")  # fmt: skip


if __name__ == "__main__":
    main()
