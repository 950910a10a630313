"""Builds and loads the sealed measurement core (``_seal/seal.cpp``).

The core is compiled from source at first use with the C++ compiler torch's extensions
use, against the torch that will load it, and cached under a name made of the digest of
everything that decides the binary (source, torch version and ABI, Python version, CUDA
or not). The evaluator builds it in a process of its own *before* any candidate runs
(:func:`ensure_built`), so no candidate ever sees or waits on the build, and concurrent
evaluators share one build through a lock. The candidate process only loads the finished
file (:func:`load`).

``AKA_NATIVE_CACHE`` moves the cache (default ``$XDG_CACHE_HOME/aka/native`` or
``~/.cache/aka/native``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

from aka.errors import AkaError

SOURCE = Path(__file__).with_name("_seal") / "seal.cpp"
NAME = "aka_seal"
CACHE_ENV = "AKA_NATIVE_CACHE"
BUILD_TIMEOUT_S = 900.0
_built: dict[str, Path] = {}


def cache_dir() -> Path:
    """Where built cores are kept (created on demand)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aka" / "native"


# The build itself: runs in a fresh interpreter that imports torch (the evaluator does not).
_BUILD = r"""
import json, os, subprocess, sys, sysconfig
import torch
from torch.utils import cpp_extension as ce
src, out, cuda = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
extra = [p for p in (sys.argv[4] if len(sys.argv) > 4 else "").split(os.pathsep) if p]
def paths(fn, cuda):
    try:
        return fn(device_type="cuda" if cuda else "cpu")
    except TypeError:
        return fn(cuda=cuda)
check = out == "-"  # compiled, not linked: the toolkit's headers come in ``extra``
inc = extra + paths(ce.include_paths, cuda and not check) + [sysconfig.get_paths()["include"]]
lib = [] if check else paths(ce.library_paths, cuda)
flags = [f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
         "-DTORCH_EXTENSION_NAME=aka_seal", "-DTORCH_API_INCLUDE_EXTENSION_H"]
for name in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    value = getattr(torch._C, f"_PYBIND11_{name}", None)
    if value is not None:
        flags.append(f'-DPYBIND11_{name}="{value}"')
libs = ["-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]
if cuda:
    flags.append("-DAKA_SEAL_CUDA")
    libs += ["-lc10_cuda", "-ltorch_cuda", "-lcudart"]
cxx = os.environ.get("CXX", "c++")
cmd = [cxx, "-O2", "-std=c++17", "-shared", "-fPIC", "-w", *flags, *[f"-I{p}" for p in inc],
       src, "-o", out, *[f"-L{p}" for p in lib], *[f"-Wl,-rpath,{p}" for p in lib], *libs,
       "-Wl,-z,relro,-z,now"]  # the GOT read-only once loaded: mprotect cannot be rebound
if check:
    cmd = [cxx, "-std=c++17", "-fsyntax-only", "-w", *flags, *[f"-I{p}" for p in inc], src]
res = subprocess.run(cmd, capture_output=True, text=True)
print(json.dumps({"rc": res.returncode, "stderr": res.stderr[-4000:], "cmd": " ".join(cmd)}))
"""

_PROBE = (
    "import json, sys, torch; print(json.dumps({'torch': torch.__version__, "
    "'cuda': bool(torch.version.cuda) and torch.cuda.is_available(), "
    "'abi': int(torch._C._GLIBCXX_USE_CXX11_ABI)}))"
)


def _run_py(code: str, *args: str) -> dict[str, object]:
    res = subprocess.run(
        [sys.executable, "-I", "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
    )
    lines = res.stdout.strip().splitlines()
    if res.returncode != 0 or not lines:
        raise AkaError(
            f"the evaluation core could not be prepared: {res.stderr.strip()[-1500:]}",
            where=str(SOURCE),
            fix="install torch in the evaluator's Python and a C++ compiler (g++)",
        )
    out: dict[str, object] = json.loads(lines[-1])
    return out


def digest(probe: dict[str, object]) -> str:
    """The cache key: source bytes, build command, torch version and ABI, Python, CUDA or not."""
    h = hashlib.sha256(SOURCE.read_bytes())
    h.update(_BUILD.encode())  # the build's flags are part of what is built
    h.update(json.dumps(probe, sort_keys=True).encode())
    h.update(sys.version.encode())
    h.update(
        sysconfig.get_config_var("SOABI").encode() if sysconfig.get_config_var("SOABI") else b""
    )
    return h.hexdigest()[:24]


def build_lock(core: str | Path) -> Path:
    """The lock file that builds of cores take, beside the core ``core`` (a built core's
    path). Candidate processes must not see it: an ``flock`` on a read-only file holds
    it as well, and every evaluator of the host that builds a missing core would wait
    for that candidate's evaluation to be killed."""
    return Path(core).parent / ".lock"


def ensure_built(device: str) -> Path:
    """The built core for ``device``'s kind (built now if missing); raises AkaError.

    Builds run in their own interpreter under an exclusive lock on the cache folder, into
    a temporary file renamed into place, so concurrent evaluators build once and a killed
    build leaves nothing half-written behind the final name.
    """
    cuda_wanted = device.startswith("cuda")
    key = "cuda" if cuda_wanted else "cpu"
    if key in _built and _built[key].is_file():
        return _built[key]
    probe = _run_py(_PROBE)
    cuda = bool(probe["cuda"]) and cuda_wanted
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{NAME}-{digest({**probe, 'cuda': cuda})}{'-cuda' if cuda else ''}.so"
    lock_path = build_lock(target)
    lock_path.touch()  # before any candidate starts, so that each one's hiding covers it
    if not target.is_file():
        with open(lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not target.is_file():
                fd, tmp = tempfile.mkstemp(dir=folder, suffix=".so.tmp")
                os.close(fd)
                try:
                    res = _run_py(_BUILD, str(SOURCE), tmp, "1" if cuda else "0")
                    if res.get("rc") != 0:
                        raise AkaError(
                            f"building the evaluation core failed: {res.get('stderr')}",
                            where=str(SOURCE),
                            fix="check the C++ compiler and torch's headers; "
                            f"the command was: {res.get('cmd')}",
                        )
                    os.replace(tmp, target)
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
    _built[key] = target
    return target


def check_source(
    cuda: bool, toolkit: Path | None = None, source: Path = SOURCE
) -> dict[str, object]:
    """Compile the core's source without building it (``-fsyntax-only``): ``rc``,
    ``stderr`` and ``cmd`` of the compiler.

    With ``cuda``, the GPU variant (``AKA_SEAL_CUDA``) against ``toolkit``'s headers (a
    CUDA toolkit's ``include`` folder). A CPU build of torch ships the headers of
    ``c10/cuda`` but not the one its CMake writes for CUDA builds; an empty stand-in is
    given for that one, so the lines only a GPU build compiles are compiled on any
    machine with the toolkit, before a GPU ever loads them.
    """
    with tempfile.TemporaryDirectory() as tmp:
        extra = []
        if cuda:
            if toolkit is None or not (toolkit / "cuda_runtime.h").is_file():
                raise AkaError(
                    f"no CUDA toolkit headers at {toolkit}",
                    where="check_source(toolkit=...)",
                    fix="name a CUDA toolkit's include folder (say /usr/local/cuda/include)",
                )
            stand_in = Path(tmp) / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
            stand_in.parent.mkdir(parents=True)
            stand_in.write_text("#pragma once\n")
            extra = [tmp, str(toolkit)]
        return _run_py(_BUILD, str(source), "-", "1" if cuda else "0", os.pathsep.join(extra))


def load(path: str | Path) -> ModuleType:
    """Load a built core (in the candidate or checker process, torch imported first)."""
    import torch  # noqa: F401  (the core links against the loaded torch)

    loader = importlib.machinery.ExtensionFileLoader(NAME, str(path))
    spec = importlib.util.spec_from_file_location(NAME, str(path), loader=loader)
    if spec is None:
        raise ImportError(f"cannot load the evaluation core from {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
