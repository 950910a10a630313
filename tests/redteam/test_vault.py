"""The sealed core's vault and the recorder's switch, against code that reaches memory
through a raw address.

numpy's ``__array_interface__`` reads and writes any address with no ctypes, so what
decides a verdict across candidate calls (the keys, the samples, the operators charged)
lives where candidate code faults on every touch, and what the recorder decides by is
read-only to it (``aka/eval/_seal/seal.cpp``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from redteam_corpus import CORPUS, scale_job

from aka.eval._pipeline import Verdict, run_job


def _run(tmp_path: Path, name: str) -> Verdict:
    job, root = scale_job(tmp_path, (CORPUS / f"{name}.py").read_text())
    return run_job(job, root)


def test_samples_rewritten_through_a_raw_address_are_out_of_reach(tmp_path: Path) -> None:
    """numpy's ``__array_interface__`` reads and writes any address, no ctypes needed. s37
    scans the sealed object for the samples as the core once kept them (two vectors of
    doubles) and sets the candidate's to 4 us, which forged a 90x speedup: it finds none
    now, and its samples are its own. s38 reaches for the vault that holds them: it has no
    access while candidate code runs, so the process dies, flagged, with no speedup."""
    rewrite = _run(tmp_path / "rewrite", "s37_raw_sample_rewrite")
    # (its walk to the sealed object through frames is a static finding: what this asks
    # is whether its rewrite reached the samples timed)
    assert rewrite.flags == ["introspection"] and rewrite.timing, (rewrite.flags, rewrite.error)
    samples = rewrite.timing[0]["pair"]["candidate"]["samples_s"]
    assert samples and 4e-6 not in samples
    reach = _run(tmp_path / "reach", "s38_vault_reach")
    assert not reach.correct and reach.timing == [] and "sealed_memory" in reach.flags
    assert any("touched the sealed core's vault" in e for e in reach.evidence), reach.evidence


def test_proc_self_mem_is_not_a_way_around_the_vault(tmp_path: Path) -> None:
    """``/proc/self/mem`` ignores page protections; opening it is caught (a tripwire that
    fails the candidate), whatever it meant to read."""
    text = (
        "import torch\n\n"
        "def scale(x):\n"
        "    f = open('/proc/self/mem', 'rb', buffering=0)\n"
        "    f.close()\n"
        "    return x * 2 + 1\n"
    )
    job, root = scale_job(tmp_path, text)
    v = run_job(job, root)
    assert not v.correct and "result_channel_tamper" in v.flags, (v.flags, v.error)
    assert any("opens /proc/self/mem" in e for e in v.evidence), v.evidence


# ``/proc/self/mem`` opened by a library function (the audit hook blames the innermost frame
# that is not the standard library's: torch's here) and read at the address of an object of
# the candidate's own: 8 bytes come back only where that file is this process's memory.
MEM_THROUGH_A_LIBRARY = """
import functools
import os

from torch.utils import _pytree

_read = []


def scale(x):
    if not _read:
        fd = _pytree.tree_map(functools.partial(os.open, flags=os.O_RDONLY), "/proc/self/mem")
        _read.append(os.pread(fd, 8, id(_read)))
    return x * 2 + 1 if len(_read[0]) == 8 else x * 0
"""


@pytest.mark.parametrize("contain", [True, False], ids=["contained", "control"])
def test_proc_self_mem_is_covered_in_a_contained_process(tmp_path: Path, contain: bool) -> None:
    """A red-team file opened it this way and rewrote the vault's samples (22-100x,
    unflagged): contained, the file is ``/dev/null`` (every case wrong: nothing read); the
    control, not contained, shows the read works where it is not covered."""
    job, root = scale_job(tmp_path, MEM_THROUGH_A_LIBRARY)
    v = run_job(dataclasses.replace(job, contain=contain), root)
    assert v.compiled["ok"] and v.cases, (v.error, v.compiled)
    assert all(c["ok"] != contain for c in v.cases), (v.error, v.cases[:1])
    if contain:
        assert any("own memory covered" in n for n in v.notes), v.notes


def test_the_vault_fault_line_is_the_one_the_core_writes() -> None:
    """The evaluator recognizes a vault fault by the core's last line on stderr; the core
    is linked to bind every symbol at load and make its GOT read-only (``mprotect`` cannot
    be rebound to leave the vault open)."""
    import importlib.util
    import shutil
    import subprocess

    import torch  # noqa: F401  (the core links against it)

    from aka.eval import _native, _proc

    path = _native.ensure_built("cpu")
    readelf = shutil.which("readelf")  # binutils: installed with the compiler that built it
    assert readelf, "readelf not found"
    dynamic = subprocess.run([readelf, "-d", "-l", str(path)], capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
    assert "BIND_NOW" in dynamic and "GNU_RELRO" in dynamic
    spec = importlib.util.spec_from_file_location("aka_seal", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.VAULT_FAULT == _proc.VAULT_FAULT


_WRITE_SEALED = r"""
import importlib.util, os, subprocess, sys, tempfile
import numpy as np
import torch
from aka.eval import _plan

path, target = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("aka_seal", path)
core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(core)
plan = _plan.make_plan([{"N": 8}], ["float32"], seed=3, seeds=1, time=False,
                       timing={"target_rel_ci": 0.05, "max_time_s": 0.1, "min_samples": 5})
secret_r, secret_w = os.pipe()
os.write(secret_w, os.urandom(32).replace(b"\n", b"x") + b"\n"
         + plan.text(forbidden=("aten::mul",)).encode() + b"END\n")
_, result_w = os.pipe()
out = os.open(tempfile.mkdtemp(), os.O_RDONLY)
seal = core.Seal(secret_r, result_w, out, "cpu", lambda *a: (torch.ones(8),), lambda x: x, False)


class Raw:
    def __init__(self, addr, n):
        self.__array_interface__ = {"shape": (n,), "typestr": "<u8", "data": (addr, False),
                                    "version": 3}


symbols = subprocess.run(["readelf", "-sW", path], capture_output=True, text=True).stdout
guarded = next(int(line.split()[1], 16) for line in symbols.splitlines()
               if line.endswith("9g_guardedE"))
offset = guarded + 4096  # the switch, between its two guard pages
base = next(int(line.split("-")[0], 16) for line in open("/proc/self/maps")
            if line.rstrip().endswith(path) and line.split()[2] == "00000000")
switch = np.asarray(Raw(base + offset, 512))
# the switch's page in words: mode, thread, vault, five lists of three words, the lists'
# mapping and size, the plan's calls and pairs, their counts, its mapping and size, the
# code table and its size
where = {"lists": int(switch[3]), "pairs": int(switch[21]), "calls": int(switch[20]),
         "codes": int(switch[25])}
if target == "switch":
    switch[0] = 0  # the recorder's mode: 0 would be off
else:
    np.asarray(Raw(where[target], 1))[0] = 0
print("written")
"""


@pytest.mark.parametrize("target", ["switch", "lists", "pairs", "calls", "codes"])
def test_what_the_recorder_and_the_timer_decide_by_cannot_be_written(
    tmp_path: Path, target: str
) -> None:
    """The recorder decides by a switch (is a candidate call under way), the plan's lists
    (which operators are forbidden, which files are the task's) and its table of code
    objects (which are a library's); the timer by the plan's pairs (shape, sample bounds,
    audit share) and the checked calls by theirs. Written through a raw address, no ctypes,
    any of them would let a candidate call the library unseen or be timed on another call
    than the evaluator asked for; once the core has read its plan they are read-only, and
    the write faults, saying so."""
    import subprocess
    import sys

    from aka.eval import _native, _proc

    path = _native.ensure_built("cpu")
    run = subprocess.run([sys.executable, "-c", _WRITE_SEALED, str(path), target],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "written" not in run.stdout and run.returncode == -11, (
        run.returncode,
        run.stderr[-800:],
    )
    assert run.stderr.strip().splitlines()[-1] == _proc.VAULT_FAULT


# A fork reads its own copy of the process through its own /proc/PID/mem (a new pid: not
# covered): the vault (no access, between two read-only guard pages) and, as the proof
# that the read works, a known bytes object of the candidate's.
FORK_READS_VAULT = """
import os

_KNOWN = b"known-bytes-of-the-candidate"
_seen = []


def _vaults():
    rows = [line.split() for line in open("/proc/self/maps")]
    out = []
    for before, row, after in zip(rows, rows[1:], rows[2:]):
        if row[1] == "---p" and before[1] == "r--p" and after[1] == "r--p" and len(row) == 5:
            lo, hi = (int(v, 16) for v in row[0].split("-"))
            out.append((lo, min(hi - lo, 4096)))
    return out


def _probe():
    fd = os.open("/proc/self/mem", os.O_RDONLY)
    known = os.pread(fd, len(_KNOWN), id(_KNOWN) + 32) == _KNOWN
    vault = any(any(os.pread(fd, n, lo)) for lo, n in _vaults())
    return bytes([known, vault])


def scale(x):
    if not _seen:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, _probe())
            os._exit(0)
        os.waitpid(pid, 0)
        _seen.append(os.read(r, 2))
    return x * 2 + 1 if _seen[0] == bytes([1, 0]) else x * 0
"""


def test_a_fork_finds_the_vault_zeroed(tmp_path: Path) -> None:
    """Right only where the fork read its own memory (the known bytes) and found every
    vault-shaped mapping zero: the key a red-team fork read there signed a timing record
    of its own."""
    job, root = scale_job(tmp_path, FORK_READS_VAULT)
    v = run_job(job, root)
    assert v.compiled["ok"] and v.cases, (v.error, v.compiled)
    assert all(c["ok"] for c in v.cases), (v.error, v.cases[:1])
    assert any("the vault wiped in forks" in n for n in v.notes), v.notes


# ctypes reached through a library function the candidate calls, and ``mprotect`` looked up
# through another: the innermost frame of each is the library's.
CTYPES_THROUGH_A_LIBRARY = """
import functools
import operator

import numpy
from torch.utils import _pytree

_lib = _pytree.tree_map(functools.partial(getattr(numpy.ctypeslib, "ctypes").CDLL), None)


def scale(x):
    _pytree.tree_map(functools.partial(getattr, _lib), "mprotect")
    return x * 2 + 1
"""


def test_a_memory_function_looked_up_through_a_library_is_the_candidate_s(
    tmp_path: Path,
) -> None:
    """A red-team file opened the vault with ``mprotect`` looked up this way (22x-100x);
    the audit hook names the lookup of that function whatever frame asked, beside the
    static finding. (Libraries' own lookups, NVML's on a GPU, are not named: torch loads
    it from the candidate's import.)"""
    job, root = scale_job(tmp_path, CTYPES_THROUGH_A_LIBRARY)
    v = run_job(job, root)
    assert not v.correct and "ctypes" in v.flags, (v.flags, v.error)
    runtime = [e for e in v.evidence if "looks up" in e]
    assert runtime and "mprotect" in runtime[0], v.evidence
