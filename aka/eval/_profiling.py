"""Opt-in profiles of evaluation processes: where an evaluation's wall time goes.

Stage times (:func:`aka.eval._pipeline.stage_times`) say which stage is slow; a profile
says why. With ``AKA_EVAL_PROFILE=DIR`` in the evaluator's environment, every candidate
and checker process runs its work under :mod:`cProfile` and leaves
``DIR/<module>-<pid>.prof`` behind (the variable itself never reaches a child: the
folder travels in the request). ``python -m aka.eval._profiling DIR`` merges them per
module and prints the functions that took the most time. Profiling slows Python-heavy
code, so benchmarks quote unprofiled runs; profiles only rank the costs.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import pstats
import secrets
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from aka.eval._switches import PROFILE_ENV

LIBRARIES = ("torch", "triton", "numpy", "sympy", "scipy")
_CALLS = itertools.count()  # a checker that serves several requests profiles each
T = TypeVar("T")


def request_field(folder: Path | None) -> str | None:
    """A request's ``profile`` field: the folder (created) when profiling is on."""
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder)


def profiled(folder: str | None, name: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, under cProfile when the request names a ``folder``.

    The folder is opened before ``fn`` runs and written through that descriptor: a
    candidate process narrows its filesystem view meanwhile (aka.eval._contain).
    """
    if not folder:
        return fn(*args)
    import cProfile
    import marshal

    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    before = set(sys.modules)
    prof = cProfile.Profile()

    def create(filename: str) -> int:
        return os.open(filename, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dir_fd)

    try:
        return prof.runcall(fn, *args)
    finally:
        # A candidate is PID 1 of its own namespace: the pid alone names no one file.
        stem = f"{name}-{os.getpid()}.{next(_CALLS)}.{secrets.token_hex(4)}"
        prof.create_stats()
        with os.fdopen(create(f"{stem}.prof"), "wb") as f:
            marshal.dump(prof.stats, f)
        # Modules imported while evaluating: library ones are what a zygote could preload.
        new = sorted(m for m in sys.modules if m not in before)
        with os.fdopen(create(f"{stem}.modules.json"), "w") as out:
            json.dump(new, out)
        os.close(dir_fd)


def summary(folder: Path, top: int = 30, sort: str = "cumulative") -> str:
    """The ``top`` functions per module (candidate process, checker), all files merged."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.prof")):
        groups.setdefault(path.name.rsplit("-", 1)[0], []).append(path)
    if not groups:
        raise FileNotFoundError(f"{folder}: no .prof files (was {PROFILE_ENV} set?)")
    out = []
    for name, paths in groups.items():
        buf = io.StringIO()
        stats = pstats.Stats(str(paths[0]), stream=buf)
        for path in paths[1:]:
            stats.add(str(path))
        buf.write(f"== {name}: {len(paths)} processes ==\n")
        stats.strip_dirs().sort_stats(sort).print_stats(top)
        out.append(buf.getvalue())
        out.append(_imports(folder, name, len(paths)))
    return "\n".join(out)


def _imports(folder: Path, name: str, processes: int) -> str:
    """Library packages imported during evaluation, by how many processes imported them."""
    seen: Counter[str] = Counter()
    for path in folder.glob(f"{name}-*.modules.json"):
        mods = json.loads(path.read_text())
        roots = {".".join(m.split(".")[:2]) for m in mods if m.split(".")[0] in LIBRARIES}
        seen.update(roots)
    lines = [f"-- {name}: library packages imported while evaluating (of {processes}) --"]
    lines += [f"{n:>4}  {m}" for m, n in seen.most_common(40)]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Print the merged profiles of a folder."""
    parser = argparse.ArgumentParser(description="Merge and rank evaluation profiles.")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="cumulative", choices=["cumulative", "tottime"])
    args = parser.parse_args()
    print(summary(args.folder, args.top, args.sort))


if __name__ == "__main__":
    main()
