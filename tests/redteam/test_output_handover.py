"""How outputs travel from the candidate process to the checker, at any size.

An evaluation at GPU sizes hands over gigabytes (every correctness call and every audited
timed call), so the sealed core hashes at memory speed, saves a twin call's bitwise-equal
output once, and audits no more large timed outputs than fit a byte budget. None of it
may weaken a verdict: a changed byte still changes the digest, twins that differ are
still both judged, and the last timed call is always checked.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from pathlib import Path

import pytest
import torch
from redteam_corpus import CORPUS, scale_job

from aka.eval import _native, _plan
from aka.eval._pipeline import run_job, run_processes

P = (1 << 61) - 1


def _reference_digest(key: bytes, data: bytes) -> str:
    """The definition: h = n, then h = h * k + w + 1 per 32-bit word, then per byte."""
    k = int.from_bytes(hmac.new(key, b"aka-seal-output-digest", hashlib.sha256).digest()[:8],
                       "little") % (P - 2) + 2  # fmt: skip
    h = len(data) % P
    words = len(data) // 4
    for i in range(words):
        h = (h * k + int.from_bytes(data[4 * i : 4 * i + 4], "little") + 1) % P
    for b in data[4 * words :]:
        h = (h * k + b + 1) % P
    return f"{h:016x}"


@pytest.fixture(scope="module")
def core():  # type: ignore[no-untyped-def]
    return _native.load(_native.ensure_built("cpu"))


def test_the_fast_digest_is_the_polynomial_it_is_defined_as(core) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(7)
    key = bytes(rng.randrange(256) for _ in range(32))
    for n in [0, 1, 3, 4, 5, 15, 16, 17, 31, 64, 67, 1000, 4099]:
        data = bytes(rng.randrange(256) for _ in range(n))
        raw = (
            torch.frombuffer(bytearray(data), dtype=torch.uint8)
            if n
            else torch.empty(0, dtype=torch.uint8)
        )
        assert core.digest(key, raw) == _reference_digest(key, data), n
    # Past 4 MiB the words are hashed in segments on several threads: still the same value.
    big = rng.randbytes((4 << 20) + 4 + 3)
    assert core.digest(
        key, torch.frombuffer(bytearray(big), dtype=torch.uint8)
    ) == _reference_digest(key, big)
    # One flipped bit anywhere, or the same words in another order, is another digest.
    data = bytearray(rng.randrange(256) for _ in range(256))
    base = core.digest(key, torch.frombuffer(bytearray(data), dtype=torch.uint8))
    for pos in (0, 3, 4, 100, 255):
        flipped = bytearray(data)
        flipped[pos] ^= 1
        assert core.digest(key, torch.frombuffer(flipped, dtype=torch.uint8)) != base
    swapped = data[4:8] + data[0:4] + data[8:]
    assert core.digest(key, torch.frombuffer(bytearray(swapped), dtype=torch.uint8)) != base


def test_a_twin_with_the_same_bytes_is_saved_once(tmp_path: Path) -> None:
    job, root = scale_job(tmp_path, (CORPUS / "honest_vectorized.py").read_text(), time=False)
    _run, assembled, checked = run_processes(job, root)
    recs = assembled["records"]
    assert assembled["twins"] and all(r.get("file") for r in recs)
    for a, b in assembled["twins"]:
        assert recs[a]["file"] == recs[b]["file"] and recs[a]["digest"] == recs[b]["digest"]
    files = {r["file"] for r in recs}
    assert len(files) == len(recs) // 2
    assert all(r["ok"] for r in checked.results), checked.results


def test_twins_that_differ_are_both_saved_and_judged(tmp_path: Path) -> None:
    job, root = scale_job(tmp_path, (CORPUS / "p06_stale_memory.py").read_text(), time=False)
    v = run_job(job, root)
    assert not v.correct and "uninitialized_read" in v.flags, (v.flags, v.error)


def test_large_outputs_get_fewer_random_audits_but_the_last_call_is_always_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = (CORPUS / "honest_vectorized.py").read_text()
    timing = {"target_rel_ci": 1e-6, "max_time_s": 0.3, "min_samples": 60, "max_samples": 60}
    job, root = scale_job(tmp_path / "a", code, timing=timing)
    _run, free, _ = run_processes(job, root)
    monkeypatch.setattr(_plan, "AUDIT_BYTES", 1)  # smaller than any output
    job, root = scale_job(tmp_path / "b", code, timing=timing)
    _run, capped, checked = run_processes(job, root)
    n_shapes = len(job.shapes)
    timed_free = [r for r in free["records"] if r["kind"] == "timed"]
    timed_capped = [r for r in capped["records"] if r["kind"] == "timed"]
    assert len(timed_free) > n_shapes  # random audits on top of the last call per shape
    assert len(timed_capped) == n_shapes  # only each shape's last call
    assert all(res["ok"] for res in checked.results), checked.results


def _sampled(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """Outputs of more than 16 elements are audited by samples of 16, with a byte budget
    that would have allowed no whole-output audit at all; 150 rounds per shape, so the
    draw (one round in ten) nearly always reaches its eight audits."""
    monkeypatch.setattr(_plan, "AUDIT_SAMPLE", 16)
    monkeypatch.setattr(_plan, "AUDIT_BYTES", 1 << 10)
    return {"target_rel_ci": 1e-6, "max_time_s": 3.0, "min_samples": 150, "max_samples": 150}


def test_large_outputs_are_audited_by_keyed_samples_as_often_as_small_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timing = _sampled(monkeypatch)
    job, root = scale_job(tmp_path, (CORPUS / "honest_vectorized.py").read_text(), timing=timing)
    _run, assembled, checked = run_processes(job, root)
    timed = [r for r in assembled["records"] if r["kind"] == "timed"]
    assert len(timed) > len(job.shapes)  # random audits on top of each shape's last call
    for rec in timed:
        sampled = rec["sampled"]
        assert rec["out_shape"] == [16] and sampled["count"] == 16
        assert sampled["shape"] == [job.shapes[0]["N"]] and sampled["stride"] > 0
    # Where the samples fall is keyed per call, so a kernel cannot aim its errors around them.
    assert len({(r["sampled"]["start"], r["sampled"]["stride"]) for r in timed}) == len(timed)
    assert all(res["ok"] for res in checked.results), checked.results


def test_a_kernel_wrong_on_part_of_large_timed_outputs_is_caught_by_the_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timing = _sampled(monkeypatch)
    code = (CORPUS / "s03_large_output_partial.py").read_text()
    job, root = scale_job(tmp_path / "a", code, timing=timing)
    _run, assembled, checked = run_processes(job, root)
    timed = [i for i, r in enumerate(assembled["records"]) if r["kind"] == "timed"]
    caught = [i for i in timed if not checked.results[i]["ok"]]
    # Not only the last call (the one audit a whole-output budget left): random ones too.
    assert len(caught) >= 2, [checked.results[i] for i in timed]
    v = run_job(*scale_job(tmp_path / "b", code, timing=timing))
    assert not v.correct and "timed_output_wrong" in v.flags, (v.flags, v.error)
