"""Unit tests of the detectors that need no evaluation process: static checks, the
signed result channel and the file-access guard (the timing detectors:
test_timing_detectors.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redteam_corpus import ADVERSARIAL, CORPUS, HONEST

from aka.eval import hack_findings
from aka.eval._sandbox import HEADER, Channel, Guards, read_frames

REPO = Path(__file__).resolve().parents[2]
# What the static checks alone must find in each adversarial candidate that they can see.
STATIC_EXPECT = {
    "p02_background_thread": {"threads"},
    "p02_background_process": {"subprocess"},
    "p04_timer_patch": {"monkeypatch"},
    "p04_timer_inflate": {"monkeypatch"},
    "p11_tf32_flag": {"precision_downgrade"},
    "p12_try_fallback": {"fallback"},
    "p13_l2_ctypes": {"ctypes"},
    "p14_read_reference": {"file_access"},
    "p14_channel_write": {"file_access"},
    "p14_gc_scan": {"introspection"},
    "p14_import_harness": {"harness_access"},
}


def _static(name: str) -> set[str]:
    path = CORPUS / f"{name}.py"
    return {f.flag for f in hack_findings(path.name, path.read_text(), ["kernel.py"])}


@pytest.mark.parametrize("entry", HONEST, ids=lambda e: e.name)
def test_honest_corpus_has_no_static_finding(entry) -> None:
    assert _static(entry.name) == set()


@pytest.mark.parametrize("entry", ADVERSARIAL, ids=lambda e: e.name)
def test_adversarial_static_flags_fire(entry) -> None:
    assert STATIC_EXPECT.get(entry.name, set()) <= _static(entry.name)


def test_bundled_starting_sources_raise_no_hack_finding() -> None:
    import yaml

    for spec_path in sorted((REPO / "tasks").rglob("task.yaml")):
        spec = yaml.safe_load(spec_path.read_text())
        src = spec_path.parent / spec.get("source_dir", "source")
        for rel in spec["editable"]:
            if rel.endswith(".py"):
                found = hack_findings(rel, (src / rel).read_text(), spec["editable"])
                assert found == [], (spec_path, [f.evidence() for f in found])


def test_modules_that_compile_source_for_their_caller_are_dynamic_code() -> None:
    # code they compile runs under a name of no file, which the sentry takes for a
    # library's: the import is what is left to see
    for mod in ("timeit", "codeop", "code", "runpy"):
        src = f"import {mod}\nfrom {mod} import x as y\n"
        found = {(f.flag, f.line) for f in hack_findings("k.py", src, ["kernel.py"])}
        assert found == {("dynamic_code", 1), ("dynamic_code", 2)}, (mod, found)
    assert hack_findings("k.py", "import codecs\n", ["kernel.py"]) == []


def test_frames_closures_and_raw_process_calls_are_findings() -> None:
    # the ways red-team files reached the harness's objects (a caught exception's frame,
    # then its caller's locals) and started a process no audit hook hears of
    src = (
        "import _posixsubprocess\n"
        "import os as o\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__\n"
        "core = f.tb_frame.f_back.f_locals['core']\n"
        "g = getattr(f, 'tb_frame')\n"
        "run.__closure__[0].cell_contents = None\n"
        "o.pread(3, 8, 0)\n"
        "o.execv('/bin/sh', ['sh'])\n"
    )
    found = {(f.flag, f.line) for f in hack_findings("k.py", src, ["kernel.py"])}
    assert found == {
        ("subprocess", 1),
        ("introspection", 6),
        ("introspection", 7),
        ("introspection", 8),
        ("introspection", 9),
        ("file_access", 10),
        ("subprocess", 11),
    }
    # the same names as plain data, and attributes merely spelled alike, are not uses
    honest = "x = {'f_back': 1}\ny = x['f_back']\nz = getattr(m, 'f_backward')\n"
    assert hack_findings("k.py", honest, ["kernel.py"]) == []


def test_ctypes_through_numpy_and_names_spelled_in_pieces_are_findings() -> None:
    # how a red-team file reached ctypes, fork and open with no literal name to match
    src = (
        "import numpy\nimport os\n"
        "c = getattr(numpy.ctypeslib, 'cty' + 'pes')\n"
        "p = x.ctypes.data\n"
        "f = getattr(os, 'fo' + 'rk')\n"
        "o = getattr(os, f'open')\n"
        "g = getattr(t, 'tb_' + 'frame')\n"
    )
    found = {(f.flag, f.line) for f in hack_findings("k.py", src, ["kernel.py"])}
    assert found == {
        ("ctypes", 3),
        ("ctypes", 4),
        ("subprocess", 5),
        ("file_access", 6),
        ("introspection", 7),
    }, found
    # a name only known at run time is not folded (a kernel's ``getattr(tl, name)``)
    assert hack_findings("k.py", "v = getattr(tl, name)\n", ["kernel.py"]) == []


def test_static_findings_name_the_line_and_resolve_aliases() -> None:
    src = (
        "import time as t\nimport os\nfrom pathlib import Path\n"
        "t.perf_counter = lambda: 0.0\n"
        "A = os.environ.get('TRITON_INTERPRET')\n"
        "B = os.environ['HOME']\n"
        "C = (Path(__file__).parent / 'kernel.cu').read_text()\n"
        "D = Path('/etc/passwd').read_text()\n"
    )
    found = {(f.flag, f.line) for f in hack_findings("k.py", src, ["kernel.py", "kernel.cu"])}
    assert found == {("monkeypatch", 4), ("env_access", 6), ("file_access", 8)}
    (one,) = [f for f in hack_findings("k.py", src, ["kernel.cu"]) if f.line == 4]
    assert one.evidence() == "k.py:4: assigns time.perf_counter"


def test_an_except_handler_that_only_assigns_is_not_a_fallback() -> None:
    src = "try:\n    import triton\nexcept ImportError:\n    triton = None\n"
    assert hack_findings("k.py", src) == []
    src2 = "def f(x):\n    try:\n        return g(x)\n    except Exception:\n        return x\n"
    assert [(f.flag, f.line) for f in hack_findings("k.py", src2)] == [("fallback", 4)]


# -- the signed channel ---------------------------------------------------------------


def _frames(objs: list[object], key: bytes) -> bytes:
    out = b""
    for obj in objs:
        payload = json.dumps(obj).encode()
        out += HEADER.pack(len(payload)) + hmac.new(key, payload, hashlib.sha256).digest()
        out += payload
    return out


def test_channel_round_trip(tmp_path: Path) -> None:
    import os

    key = b"k" * 32
    r, w = os.pipe()
    Channel(w, key).send({"kind": "result", "x": 1})
    os.close(w)
    data = os.read(r, 1 << 16)
    os.close(r)
    frames, tamper = read_frames(data, key)
    assert tamper is None and [f for _, f in frames] == [{"kind": "result", "x": 1}]


@given(st.binary(min_size=1, max_size=64), st.integers(0, 2))
def test_any_foreign_bytes_are_detected(junk: bytes, where: int) -> None:
    key = b"s" * 32
    good = [{"kind": "mark"}, {"kind": "result", "ok": True}]
    data = _frames(good, key)
    cut = [0, len(_frames(good[:1], key)), len(data)][where]
    frames, tamper = read_frames(data[:cut] + junk + data[cut:], key)
    assert tamper is not None
    assert len(frames) <= 2


def test_a_forged_frame_with_another_key_is_detected() -> None:
    frames, tamper = read_frames(_frames([{"kind": "result"}], b"x" * 32), b"y" * 32)
    assert frames == [] and tamper is not None


def _collected(core: list[dict[str, Any]]) -> list[str]:
    """What a process's collector finds tampered in these signed core frames."""
    from types import SimpleNamespace

    from aka.eval._proc import Proc

    key = b"k" * 32
    reader = SimpleNamespace(data=_frames(core, key), arrivals={})
    proc = SimpleNamespace(reader=reader, key=key, module="checker", tail=[], report_from=0,
                           proc=SimpleNamespace(returncode=0))  # fmt: skip
    got = Proc._result(proc, [])  # type: ignore[arg-type]
    return [f["evidence"] for f in got.flags if f["flag"] == "result_channel_tamper"]


def test_core_frames_after_the_core_reported_done_are_tampering() -> None:
    """The gate lets the device's other processes go on at the first ``core_done``: a
    frame forged early would let them run during the rest of the samples."""
    timing = {"kind": "timing", "pair": 0}
    done = {"kind": "core_done", "calls": 1, "error": None, "code": []}
    after = ["core frames after the core reported its timing done"]
    assert _collected([timing, done]) == []
    assert _collected([done, timing]) == after
    assert _collected([timing, done, done]) == after


# -- the file guard -----------------------------------------------------------------


def test_guard_classifies_opens(tmp_path: Path) -> None:
    root = tmp_path / "eval"
    cand = root / "cand"
    cand.mkdir(parents=True)
    g = Guards(cand, deny_roots=[root], allow_roots=[tmp_path / "tmp", tmp_path])
    g._open((str(cand / "kernel.cu"), "r"), "k.py:1")
    g._open((str(tmp_path / "tmp" / "build.so"), "r"), "k.py:2")
    assert g.flags == []
    g._open((str(root / "task" / "reference.py"), "r"), "k.py:3")
    g._open(("/proc/self/fd/5", "w"), "k.py:4")
    g._open(("/etc/hostname", "r"), "k.py:5")
    assert [f["flag"] for f in g.flags] == [
        "harness_access",
        "result_channel_tamper",
        "file_access",
    ]


def _frame_chain(files: list[str]) -> Any:
    """The innermost frame of calls through functions "defined" in ``files`` (outer first)."""
    src = "import sys\ndef f():\n    return NEXT() if NEXT else sys._getframe()\n"
    nxt: Any = None
    for name in reversed(files):
        scope: dict[str, Any] = {"NEXT": nxt}
        exec(compile(src, name, "exec"), scope)
        nxt = scope["f"]
    return nxt()


def test_an_assignment_is_the_candidates_unless_a_library_made_it(tmp_path: Path) -> None:
    cand = tmp_path / "cand"
    cand.mkdir()
    g = Guards(cand, deny_roots=[tmp_path], allow_roots=[])
    stdlib = sysconfig.get_paths()["stdlib"]
    kernel, mock = str(cand / "kernel.py"), f"{stdlib}/unittest/mock.py"
    triton = "/opt/py/lib/python3.12/site-packages/triton/runtime/interpreter.py"
    # The candidate itself, or the standard library on its behalf: the candidate's.
    assert not g._library_code(_frame_chain([kernel]))
    assert not g._library_code(_frame_chain([kernel, mock]))
    # Triton's own code, or a module being imported, while the candidate's kernel runs.
    assert g._library_code(_frame_chain([kernel, triton]))
    assert g._library_code(_frame_chain([kernel, triton, f"{stdlib}/dataclasses.py"]))
    assert g._library_code(
        _frame_chain([kernel, "<frozen importlib._bootstrap>", f"{stdlib}/dataclasses.py"])
    )


def test_library_calls_are_the_librarys_where_site_packages_sits_under_the_stdlib(
    tmp_path: Path,
) -> None:
    """torch's own ctypes call (NVML) made for an honest candidate is torch's, also on
    systems whose site-packages folder lives under the standard library's prefix."""
    cand = tmp_path / "cand"
    cand.mkdir()
    g = Guards(cand, deny_roots=[tmp_path], allow_roots=[])
    stdlib = sysconfig.get_paths()["stdlib"]
    kernel = str(cand / "kernel.py")
    torch_cuda = f"{stdlib}/site-packages/torch/cuda/__init__.py"
    ctypes_init = f"{stdlib}/ctypes/__init__.py"
    assert g._candidate_frame(_frame_chain([kernel, torch_cuda, ctypes_init])) is None
    # the candidate's own ctypes call is still the candidate's
    inner = g._candidate_frame(_frame_chain([kernel, ctypes_init]))
    assert inner is not None and inner.f_code.co_filename == kernel


def test_backend_queries_are_not_precision_changes() -> None:
    """Asking whether cuDNN or a CPU ISA is there changes nothing; setting a backend switch
    (by assignment or through its ``flags`` context) still is a precision finding."""
    asks = (
        "import torch\nimport torch as t\n"
        "A = torch.backends.cudnn.is_available() and t.backends.mkldnn.is_available()\n"
        "B = torch.backends.cpu.get_cpu_capability(), torch.backends.cudnn.version()\n"
    )
    assert hack_findings("kernel.py", asks, ["kernel.py"]) == []
    sets = (
        "import torch\nimport torch as t\n"
        "t.backends.cuda.matmul.allow_tf32 = True\n"
        "with torch.backends.cudnn.flags(enabled=True, allow_tf32=True):\n    pass\n"
    )
    found = hack_findings("kernel.py", sets, ["kernel.py"])
    assert [(f.flag, f.line) for f in found] == [
        ("precision_downgrade", 3), ("precision_downgrade", 4)
    ], [f.evidence() for f in found]  # fmt: skip


def test_the_interpreters_own_folders_inside_a_private_one_are_bound_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aka or its virtualenv living in the temporary folder (a clone in /tmp) must stay
    importable after that folder is replaced: Python and Triton import lazily."""
    from aka.eval import _contain

    repo, venv, evald, elsewhere = (tmp_path / "clone", tmp_path / "clone" / ".venv",
                                    tmp_path / "aka-eval-1", Path("/usr"))  # fmt: skip
    for d in (repo / "aka", venv / "lib", evald):
        d.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(sys, "base_prefix", str(elsewhere))
    monkeypatch.setattr(sys, "path", [str(venv / "lib"), str(repo), str(elsewhere), ""])
    kept = _contain._kept(str(evald), [str(tmp_path)])
    assert kept == sorted([str(repo.resolve()), str(evald.resolve())], key=len)
    assert _contain._kept(None, ["/nonexistent-private"]) == []


def test_the_clean_timing_key_holds_names_within_the_evaluation_not_its_folder(
    tmp_path: Path,
) -> None:
    """Every evaluation lays its trees out in a folder of its own: a key holding the folder
    would never be found again, and each candidate would pay for a clean timing."""
    from aka.eval._baseline_ref import clean_key

    def key(root: Path, text: str = "def f(): pass\n", name: str = "kernel.py") -> str:
        (root / "base").mkdir(parents=True)
        (root / "base" / name).write_text(text)
        return clean_key(root, [root / "base" / name], "kernel.py", "f", [{"N": 8}])

    same = key(tmp_path / "one")
    assert key(tmp_path / "two") == same
    assert key(tmp_path / "bytes", text="def f(): return 1\n") != same
    assert key(tmp_path / "name", name="other.py") != same


def test_a_task_code_site_is_judged_by_its_place_in_the_tree(tmp_path: Path) -> None:
    """Sites name files as code objects do (folder as given or resolved, colons in it);
    the same call in the baseline's copy of the file matches once both are relative."""
    from aka.eval import _sites

    cand = tmp_path / "eval:1" / "cand"
    cand.mkdir(parents=True)
    raw = f"aten::mm@{cand.resolve()}/model/llama.py:44:decode_step:118:00ff00ff00ff00ff"
    site = _sites.parse(raw, _sites.trees(cand))
    assert site == _sites.Site("aten::mm", "model/llama.py", 44, "decode_step", 118,
                               "00ff00ff00ff00ff")  # fmt: skip
    assert _sites.split(["aten::mul", raw]) == (["aten::mul"], [raw])
    assert _sites.charged([raw], cand, frozenset({site})) == []
    moved = raw.replace(":118:", ":120:")  # another instruction of the same function
    (found,) = _sites.charged([moved], cand, frozenset({site}))
    assert "aten::mm through the task's code at model/llama.py:44 (decode_step)" in found
    elsewhere = raw.replace(str(cand.resolve()), "/tmp/other")  # a file outside the tree
    assert _sites.charged([elsewhere], cand, frozenset({site}))
    assert "could not be run alone" in _sites.charged([raw], cand, None)[0]
    assert _sites.parse("aten::mm@no-fields", [cand]) is None
    assert "unreadable" in _sites.charged(["aten::mm@x:1:f:z:d"], cand, frozenset())[0]


def test_a_reference_site_is_the_same_in_every_evaluation_s_folder(tmp_path: Path) -> None:
    """``make_inputs`` runs in the candidate's process from the evaluation's task folder,
    a new folder each time: its sites are named within it, so the baseline's kept sites
    (from the first evaluation of the task) match every later evaluation's."""
    from aka.eval import _sites

    first, later = tmp_path / "eval-1", tmp_path / "eval-2"
    for root in (first, later):
        (root / "cand").mkdir(parents=True)
        (root / "task").mkdir()
    raw = "aten::randn@{}/task/reference.py:45:make_inputs:30:0123456789abcdef"
    kept = _sites.parse(raw.format(first), _sites.trees(first / "base"), first / "task")
    assert kept is not None and kept.file == "task/reference.py"
    assert _sites.charged([raw.format(later)], later / "cand", frozenset({kept})) == []
    # Named without the prefix it would be a candidate file of that name.
    assert _sites.parse(raw.format(later), _sites.trees(later / "cand")).file != kept.file


def test_kernels_launched_while_inputs_are_drawn_are_noted_unless_the_task_s(
    tmp_path: Path,
) -> None:
    """What runs while the evaluator draws a call's inputs runs outside every timed
    window: a kernel of the task's own files (or of its reference's folder) may, any
    other is noted, once; the draw says when it is under way."""
    from types import SimpleNamespace

    from aka.eval._kernels import InputDraw

    task_dir, cand = tmp_path / "task", tmp_path / "cand"

    def kernel_of(path: Path) -> SimpleNamespace:
        space: dict[str, Any] = {}
        exec(compile("def k(): pass", str(path), "exec"), space)
        return SimpleNamespace(fn=space["k"])

    active: list[bool] = []

    def make_inputs(n: int) -> int:
        active.append(draw.active)
        for path in (task_dir / "helpers.py", cand / "model.py", cand / "kernel.py"):
            draw.launched(kernel_of(path))
        draw.launched(kernel_of(cand / "kernel.py"))  # the same kernel again: once
        return n

    draw = InputDraw(make_inputs, [str(cand / "model.py")], str(task_dir))
    assert not draw.active and draw(3) == 3 and not draw.active and active == [True]
    assert draw.found == ["k (kernel.py)"]
