"""Requests to evaluation processes are typed: a line that does not fit fails on arrival."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aka.eval._wire import CandidateRequest, CheckerRequest, Delivery, WireError, decode, encode

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
