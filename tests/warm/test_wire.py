"""Requests to evaluation processes are typed: a line that does not fit fails on arrival."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aka.eval._wire import (
    CandidateReport,
    CandidateRequest,
    CheckerReport,
    CheckerRequest,
    Delivery,
    WireError,
    decode,
    decode_report,
    encode,
    encode_report,
)

CHECKER = CheckerRequest(
    task_dir="/e/task", reference="reference.py", out_dir="/dev/shm/aka-x", pass_shape=False,
    tolerances={"float32": {"atol": 1e-5, "rtol": 1e-5}}, dtypes=["float32"], device="cpu",
    records=[{"kind": "case", "file": "c/0.bin", "shape": {"N": 8}}], native="/c/seal.so",
    timed_shapes=[{"N": 8}],
)  # fmt: skip


def _line(body: dict[str, object]) -> bytes:
    return json.dumps(body).encode() + b"\n"


@given(
    n=st.integers(1, 1 << 40),
    key=st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    env=st.dictionaries(st.text(min_size=1), st.text()),
)
def test_a_request_and_its_delivery_round_trip(n: int, key: str | None,
                                               env: dict[str, str]) -> None:  # fmt: skip
    request = dataclasses.replace(CHECKER, timed_shapes=[{"N": n}])
    delivery = Delivery(key=key, cwd="/e/scratch", env=env)
    assert decode(CheckerRequest, encode(request, delivery)) == (request, delivery)


def test_a_missing_unknown_or_mistyped_field_is_refused_with_its_name() -> None:
    body = json.loads(encode(CHECKER, Delivery()))
    missing = {**body, "request": {k: v for k, v in body["request"].items() if k != "device"}}
    with pytest.raises(
        WireError, match=r"CheckerRequest: unknown fields \[\], missing fields \['device'\]"
    ):
        decode(CheckerRequest, _line(missing))
    unknown = {**body, "request": {**body["request"], "shapes": []}}
    with pytest.raises(WireError, match=r"unknown fields \['shapes'\]"):
        decode(CheckerRequest, _line(unknown))
    for field, value in (("pass_shape", "no"), ("timed_shapes", [{"N": "8"}]),
                         ("tolerances", {"float32": {"atol": True}})):  # fmt: skip
        bad = {**body, "request": {**body["request"], field: value}}
        with pytest.raises(WireError, match=f"CheckerRequest.{field}:"):
            decode(CheckerRequest, _line(bad))


def test_a_request_of_the_other_process_or_not_json_is_refused() -> None:
    with pytest.raises(WireError, match="CandidateRequest: unknown fields"):
        decode(CandidateRequest, encode(CHECKER, Delivery()))
    with pytest.raises(WireError, match="not JSON"):
        decode(CheckerRequest, b"{\n")
    with pytest.raises(WireError, match="'request' and 'delivery'"):
        decode(CheckerRequest, _line({"request": {}}))


def test_reports_decode_only_as_their_own_type() -> None:
    """A report is decoded strictly: a forged body (extra fields, wrong kinds of values)
    is refused, and the parent flags the channel instead of reading it."""
    report = CandidateReport(compiled={"ok": True, "error": None, "wall_s": 0.1}, flags=[],
                             notes=["n"], error=None, network="isolated", contained="c")  # fmt: skip
    body = encode_report(report)
    assert body["kind"] == "result"
    assert decode_report(CandidateReport, body) == report
    with pytest.raises(WireError, match=r"unknown fields \['records'\]"):
        decode_report(CandidateReport, {**body, "records": []})
    with pytest.raises(WireError, match=r"CandidateReport\.flags:"):
        decode_report(CandidateReport, {**body, "flags": ["correct"]})
    with pytest.raises(WireError, match="CheckerReport: unknown fields"):
        decode_report(CheckerReport, body)
    checker = CheckerReport(results=[{"ok": True}], flags=[], work=[None, {"flops": 1.0}])
    assert decode_report(CheckerReport, encode_report(checker)) == checker
