"""Every process of a command task's code is laid out alike.

A command task times each round in a new process, and a case of a few tens of
microseconds of host work moves with where that process's libraries, heap and stack
land and with its hash seed. Each command therefore runs with address-space
randomization off and one hash seed (``aka.kinds._command._fixed_layout``); the calling
thread's own execution domain is left as it was, and the result says how commands ran.
"""

from __future__ import annotations

import errno
import json
import sys
import threading
from pathlib import Path

import pytest

from aka.eval import _warm
from aka.kind_specs import CommandSpec
from aka.kinds import _command
from aka.kinds._command import ADDR_NO_RANDOMIZE, run_command, run_commands

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux personality")

# What a process was given: its execution domain, where its stack and libc lie, its hash
# seed, and a string hash (random per process unless the seed is fixed).
PROBE = """import json, os, pathlib, sys
maps = pathlib.Path("/proc/self/maps").read_text().splitlines()
stack = next(line.split("-")[0] for line in maps if line.endswith("[stack]"))
libc = next(line.split("-")[0] for line in maps if "libc" in line)
persona = int(pathlib.Path("/proc/self/personality").read_text(), 16)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"persona": persona, "stack": stack, "libc": libc,
                        "seed": os.environ.get("PYTHONHASHSEED"), "hash": hash("aka")}) + "\\n")
"""


def _probe(tmp_path: Path, fixed: bool, runs: int = 2) -> list[dict[str, object]]:
    (tmp_path / "probe.py").write_text(PROBE)
    log = tmp_path / f"seen-{fixed}.jsonl"
    for _ in range(runs):
        ok, detail, _ = run_command(f"{sys.executable} probe.py {log}", tmp_path, device="cpu",
                                    timeout=60, fixed=fixed)  # fmt: skip
        assert ok, detail
    return [json.loads(line) for line in log.read_text().splitlines()]


def _own_persona() -> int:
    return int(Path("/proc/thread-self/personality").read_text(), 16)


def test_each_process_of_a_command_is_laid_out_alike(tmp_path: Path) -> None:
    with _command._fixed_layout(True) as how:
        pass
    if how != "fixed":
        pytest.skip(f"this machine refuses the execution domain: {how}")
    before = _own_persona()
    runs = _probe(tmp_path, fixed=True)
    assert all(int(r["persona"]) & ADDR_NO_RANDOMIZE for r in runs)  # type: ignore[call-overload]
    assert runs[0]["stack"] == runs[1]["stack"] and runs[0]["libc"] == runs[1]["libc"]
    assert runs[0]["hash"] == runs[1]["hash"] and runs[0]["seed"] == "0"
    assert _own_persona() == before  # the caller's own domain is put back


def test_the_control_without_it_is_randomized(tmp_path: Path) -> None:
    """Without ``fixed`` each process draws its own addresses and hash seed (the control:
    the probe above tells the two apart)."""
    runs = _probe(tmp_path, fixed=False, runs=3)
    assert not any(int(r["persona"]) & ADDR_NO_RANDOMIZE for r in runs)  # type: ignore[call-overload]
    assert len({r["stack"] for r in runs}) > 1
    assert len({r["hash"] for r in runs}) > 1


def test_other_threads_start_processes_randomized_meanwhile(tmp_path: Path) -> None:
    """The domain is the calling thread's: a command another thread starts while one is
    being started laid out is not laid out (no lock to hold, nothing to race)."""
    inside, done = threading.Event(), threading.Event()
    seen: list[list[dict[str, object]]] = []

    def other() -> None:
        inside.wait(10)
        seen.append(_probe(tmp_path / "other", fixed=False, runs=1))
        done.set()

    (tmp_path / "other").mkdir()
    t = threading.Thread(target=other)
    t.start()
    with _command._fixed_layout(True) as how:
        inside.set()
        assert done.wait(60)
    t.join()
    if how != "fixed":
        pytest.skip(f"this machine refuses the execution domain: {how}")
    assert not int(seen[0][0]["persona"]) & ADDR_NO_RANDOMIZE  # type: ignore[call-overload]


def test_a_refused_domain_runs_randomized_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a seccomp profile refuses the domain (Docker's allows only a few), the
    commands still run, and the evaluation's result names how they ran."""
    monkeypatch.setattr(_warm, "CACHE_ROOT", tmp_path / "cache")
    real = _command._personality

    def seccomp(persona: int) -> tuple[int, int]:  # reading is allowed, setting is not
        return real(persona) if persona == 0xFFFFFFFF else (-1, errno.EPERM)

    monkeypatch.setattr(_command, "_personality", seccomp)
    for arm in ("base", "cand"):
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "perf.py").write_text(
            "import json; json.dump([{'test_case_id': 'a', 'execution_time_ms': 1.0}], "
            "open('performance_report.json', 'w'))"
        )
    py = sys.executable
    spec = CommandSpec(compile="true", correctness="true", performance=f"{py} perf.py",
                       report="performance_report.json")  # fmt: skip
    out = run_commands(spec, base=tmp_path / "base", cand=tmp_path / "cand", device="cpu",
                       time=True, rounds=1)  # fmt: skip
    assert out["error"] is None and out["timing"], out
    assert out["device"]["layout"] == "random (personality: Operation not permitted)"
