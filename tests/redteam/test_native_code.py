"""Native code a candidate makes and loads: refused by the kernel where the evaluation is
contained, seen by the sealed core where it is not (aka.eval._foreign).

The candidate copies a system library into its temporary folder and loads it: no compiler
needed, and the file is new to the evaluation exactly as a library built by
``load_inline`` or inductor would be (``s23``/``s33`` in the corpus do that for real).
The fixture scale task is judged as a Triton task here (``backend: triton``); a PyTorch
task's candidate may compile (inductor loads C++ on the CPU), and nothing is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from redteam_corpus import scale_job

from aka.eval import _foreign
from aka.eval._pipeline import Verdict, run_job

LIBM = next(
    (p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6") if Path(p).exists()),
    None,
)
needs_libm = pytest.mark.skipif(LIBM is None, reason="no libm at a known path")

LOADS_A_COPY = f"""import ctypes, os, shutil, tempfile

_lib = os.path.join(tempfile.gettempdir(), "mine.so")
shutil.copy({LIBM!r}, _lib)
_m = ctypes.CDLL(_lib)


def scale(x):
    return x * 2 + 1
"""

# The same, in Triton's own cache, named like Triton's launcher.
LOADS_FROM_TRITON_CACHE = LOADS_A_COPY.replace(
    'os.path.join(tempfile.gettempdir(), "mine.so")',
    'os.path.join(os.environ["TRITON_CACHE_DIR"], "__triton_launcher.so")',
)

# A library in anonymous memory: ``memfd_create`` files live on no mount of the process,
# so ``noexec`` does not reach them, and an extension module loads from one without ctypes.
LOADS_FROM_MEMFD = """import _sqlite3, importlib.machinery, importlib.util, os

_fd = os.memfd_create("ext")
with open(_sqlite3.__file__, "rb") as f:
    os.write(_fd, f.read())
_spec = importlib.util.spec_from_file_location(
    "_sqlite3", f"/proc/self/fd/{_fd}",
    loader=importlib.machinery.ExtensionFileLoader("_sqlite3", f"/proc/self/fd/{_fd}"),
)
_mod = importlib.util.module_from_spec(_spec)


def scale(x):
    return x * 2 + 1
"""

# An honest kernel importing a standard library module with a C extension no earlier
# code of the process loaded: a library of the environment, never the candidate's.
# (``_sqlite3``, and the system's libsqlite3 with it, are loaded by neither torch nor triton.)
STDLIB_EXTENSION = """import _sqlite3
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + 1, mask=mask)


def scale(x):
    assert _sqlite3.sqlite_version
    y = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y
"""


def _run(tmp_path: Path, candidate: str, **changes: object) -> Verdict:
    return run_job(*scale_job(tmp_path, candidate, backend="triton", **changes))


@needs_libm
def test_a_library_written_where_the_candidate_can_write_cannot_be_loaded(tmp_path: Path) -> None:
    verdict = _run(tmp_path, LOADS_A_COPY)
    assert not verdict.correct
    assert "native_code" in verdict.flags
    assert _foreign.REFUSED in str(verdict.compiled.get("error"))
    assert any("writable folders noexec" in n for n in verdict.notes), verdict.notes


@needs_libm
def test_without_containment_the_core_sees_the_library_mapped(tmp_path: Path) -> None:
    verdict = _run(tmp_path, LOADS_A_COPY, contain=False)
    assert not verdict.correct
    assert verdict.compiled.get("ok"), verdict.compiled
    seen = [e for e in verdict.evidence if e.startswith("native_code:")]
    assert seen and "mine.so (made during the evaluation)" in seen[0], verdict.evidence


@needs_libm
def test_on_the_cpu_not_even_triton_s_cache_holds_code(tmp_path: Path) -> None:
    """The interpreter builds no launcher, so on the CPU Triton's cache is ``noexec`` too,
    and a library there is refused whatever its name."""
    verdict = _run(tmp_path, LOADS_FROM_TRITON_CACHE)
    assert not verdict.correct and "native_code" in verdict.flags, verdict.evidence
    assert _foreign.REFUSED in str(verdict.compiled.get("error"))


@pytest.mark.parametrize("contain", [True, False])
def test_a_library_loaded_from_anonymous_memory_is_seen_by_the_core(
    tmp_path: Path, contain: bool
) -> None:
    verdict = _run(tmp_path, LOADS_FROM_MEMFD, contain=contain)
    assert not verdict.correct
    seen = [e for e in verdict.evidence if e.startswith("native_code: /memfd:ext")]
    assert seen, verdict.evidence


@pytest.mark.parametrize("contain", [True, False])
def test_a_library_of_the_environment_loaded_late_is_not_native_code(
    tmp_path: Path, contain: bool
) -> None:
    verdict = _run(tmp_path, STDLIB_EXTENSION, contain=contain)
    assert verdict.correct, verdict.error
    assert not verdict.flags


def test_only_what_the_candidate_could_have_made_counts() -> None:
    roots = (Path("/tmp"),)
    code = [
        {"path": "/usr/lib/python3.11/lib-dynload/_bz2.so", "fresh": False},
        {"path": "/tmp/aka-triton_cache_dir/AB12/__triton_launcher.cpython-312-x86_64-linux-gnu.so",
         "fresh": True},
        {"path": "/home/u/.cache/aka/kernels/f00/triton/CD34/cuda_utils.so", "fresh": True},
        {"path": "/tmp/torchinductor_u/xy/cxy.so", "fresh": True},
        {"path": "/eval/7/cand/helper.py", "fresh": False},  # a library under a .py name
        {"path": "/memfd:jit (deleted)", "fresh": True},
    ]  # fmt: skip
    own = Path("/eval/7")

    def found(backend: str, gpu: bool) -> list[str]:
        flagged = _foreign.flags(backend, code, roots, gpu=gpu, own=own)
        return [f["evidence"].split(" ", 1)[0] for f in flagged]

    assert found("triton", True) == [
        "/tmp/torchinductor_u/xy/cxy.so", "/eval/7/cand/helper.py", "/memfd:jit"
    ]  # fmt: skip
    # Triton's interpreter builds no launcher: on the CPU, one is the candidate's.
    on_cpu = found("triton", False)
    assert len(on_cpu) == 5 and "cuda_utils.so" in on_cpu[1]
    assert found("cuda", True) == []  # CUDA candidates build extensions
    assert found("torch", False) == []  # and PyTorch ones compile


def test_packages_installed_under_a_temporary_folder_are_the_environment() -> None:
    """A GPU machine whose image lacks a package gets it with ``pip install --target
    /tmp/site``: its libraries are on the import path, older than the evaluation."""
    code = [{"path": "/tmp/site/blake3/blake3.so", "fresh": False}]
    roots, env = (Path("/tmp"),), (Path("/tmp/site"),)
    assert _foreign.flags("triton", code, roots, gpu=True, env=env) == []
    assert _foreign.flags("triton", code, roots, gpu=True) != []
    fresh = [{**code[0], "fresh": True}]  # one written there during the evaluation
    assert _foreign.flags("triton", fresh, roots, gpu=True, env=env) != []
    # The evaluation's own folder is the candidate's, on the import path or not.
    mine = [{"path": "/tmp/site/ev/cand/helper.py", "fresh": False}]
    own = Path("/tmp/site/ev")
    assert _foreign.flags("triton", mine, roots, gpu=True, env=env, own=own) != []
    assert all(p.is_dir() for p in _foreign.environment())


def test_a_launcher_name_outside_a_triton_cache_is_not_a_launcher() -> None:
    assert _foreign.triton_launcher("/x/triton/cache/AB/__triton_launcher.so")
    assert not _foreign.triton_launcher("/tmp/evil/__triton_launcher.so")
    assert not _foreign.triton_launcher("/tmp/triton/AB/mine.so")


@needs_libm
def test_a_pytorch_task_s_candidate_may_load_native_code(tmp_path: Path) -> None:
    """``backend: torch`` candidates may use torch.compile, whose CPU kernels are C++
    libraries inductor builds in the temporary folder: nothing there is ``noexec``."""
    verdict = run_job(*scale_job(tmp_path, LOADS_A_COPY))
    assert "native_code" not in verdict.flags, verdict.evidence
    assert verdict.compiled.get("ok"), verdict.compiled
