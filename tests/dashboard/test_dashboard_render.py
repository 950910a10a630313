"""Pages without a browser: escaping, numbers that agree with aka compare, the server's
contract (local, read-only, blobs as plain text), live updates, held-out, static report."""

from __future__ import annotations

import html
import json
import re
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import LABEL, Arena
from hypothesis import given
from hypothesis import strategies as st

from aka import dashboard
from aka import events as ev
from aka.audit import audit
from aka.dashboard._data import leaderboard, quadrant
from aka.dashboard._html import h
from aka.dashboard._links import anchor
from aka.events import REGISTRY
from aka.report import connect
from aka.scoring import parse_policy
from aka_ledger import Ledger


def _open(path: Path) -> Ledger:
    return Ledger.open(path, registry=REGISTRY, create=False)


def _fetch(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@given(st.text())
def test_escaped_text_has_no_markup_and_round_trips(text: str) -> None:
    out = h(text)
    assert not set("<>\"'") & set(out)
    assert html.unescape(out) == text


def _pages(led: Ledger, arena: Arena) -> dict[str, str]:
    key = "torch/ops/affine#fast#0"
    return {
        "index": dashboard.index_page(led),
        "run": dashboard.run_page(led, arena.run_id),
        "matrix": dashboard.matrix_page(led),
        "compare": dashboard.compare_page(led, None, None),
        "attempt": dashboard.attempt_page(led, arena.run_id, key),
        "static": dashboard.render_static_report(led, arena.run_id),
    }


def test_an_attempt_s_held_out_cases_are_shown_as_such(arena: Arena) -> None:
    # every score checks the task's held-out shape (N=4099 on the CPU): the auditor sees it
    with _open(arena.ledger) as led:
        page = dashboard.attempt_page(led, arena.run_id, "torch/ops/affine#fast#0")
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)
    held = [r for r in rows if "(held out)" in r]
    assert held and all("4099" in r for r in held), held
    assert any("4096" in r and "(held out)" not in r for r in rows)


def test_every_page_shows_the_markup_label_as_text(arena: Arena) -> None:
    for name, text in _pages(_open(arena.ledger), arena).items():
        assert LABEL not in text, name
        assert "<i>" not in text, name
        if name not in ("compare", "attempt"):  # these name runs by id; run ids slug their label
            assert h(LABEL) in text, name


def test_leaderboard_numbers_are_the_numbers_of_aka_compare(cli, arena: Arena) -> None:
    res = cli(
        "compare", f"{arena.run_id}/base", f"{arena.run_id}/fast",
        "--ledger", str(arena.ledger), "--format", "json",
    )  # fmt: skip
    assert res.code == 0, res.err
    cmp = json.loads(res.out)
    board = {r["arm"]: r for r in leaderboard(connect(_open(arena.ledger)), [arena.run_id])}
    for side, arm in (("a", "base"), ("b", "fast")):
        assert board[arm]["geomean_speedup"] == pytest.approx(
            cmp[side]["geomean_speedup"], rel=1e-12
        )
        assert board[arm]["correct"] == pytest.approx(cmp[side]["correct_rate"])
        assert board[arm]["compiled"] == pytest.approx(cmp[side]["compiled_rate"])
        assert board[arm]["fast_1"] == pytest.approx(cmp[side]["fast_p"]["1.0"])
        assert board[arm]["mean_score"] == pytest.approx(cmp[side]["mean_score"], rel=1e-12)
    # Ranked by geomean speedup (which arm is ahead is the CPU's timing, not the test's).
    ranked = sorted(board, key=lambda arm: -board[arm]["geomean_speedup"])
    assert list(board) == ranked and set(board) == {"fast", "base"}


def test_static_report_is_one_self_contained_page(cli, arena: Arena) -> None:
    text = dashboard.render_static_report(_open(arena.ledger), arena.run_id)
    rows = json.loads(cli("report", arena.run_id, "--ledger", str(arena.ledger), "-f", "json").out)
    for row in rows:
        assert f'id="{anchor(row["attempt_key"])}"' in text
        assert row["candidate"] in text
    hrefs = re.findall(r'(?:href|src|action)="([^"]*)"', text)
    assert "<script src" not in text
    assert hrefs and all(x.startswith(("#", "data:")) for x in hrefs), hrefs
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_server_is_local_read_only_and_serves_blobs_as_text(arena: Arena, serve) -> None:
    server = serve(arena.ledger)
    assert server.server_address[0] == "127.0.0.1"
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert _fetch(server.url, method)[0] == 405
    status, _, body = _fetch(server.url, "HEAD")
    assert status == 200 and body == b""
    assert _fetch(server.url + "no/such/page")[0] == 404
    assert _fetch(server.url + "blob/..%2F..%2Fetc%2Fpasswd")[0] == 404
    led = _open(arena.ledger)
    a = audit(led, "torch/ops/affine#fast#0", run_id=arena.run_id)
    kernel = next(f for f in a.files if f.role == "candidate")
    status, headers, body = _fetch(server.url + "blob/" + kernel.digest)
    assert status == 200 and body == led.cas.get(kernel.digest)
    assert headers["Content-Type"].startswith("text/plain")
    assert headers["X-Content-Type-Options"] == "nosniff"
    status, headers, _ = _fetch(server.url)
    assert status == 200 and "default-src 'none'" in headers["Content-Security-Policy"]


def _copy(arena: Arena, tmp_path: Path) -> Path:
    dest = tmp_path / "ledger"
    shutil.copytree(arena.ledger, dest)
    return dest


def _started(led: Ledger, run_id: str) -> ev.RunStarted:
    p = next(e.payload for e in led.events(run_id=run_id, types=["RunStarted"]))
    assert isinstance(p, ev.RunStarted)
    return p


def test_pages_follow_a_run_in_progress(arena: Arena, serve, tmp_path: Path) -> None:
    path = _copy(arena, tmp_path)
    server = serve(path)
    before = _fetch(server.url)[2].decode()
    assert "<body data-live" not in before and "live-run" not in before
    led = _open(path)
    led.append(_started(led, arena.run_id), run_id="live-run")
    planned = ev.AttemptPlanned(
        task="torch/ops/affine", arm="base", agent="noop", repeat=0, order=0
    )
    led.append(planned, run_id="live-run", attempt_key="k#0")
    led.append(ev.AttemptStarted(try_no=1, worker="w"), run_id="live-run", attempt_key="k#0")
    item = ev.AgentItemRecord(kind="message", text="<b>thinking</b> about it")
    led.append(ev.AgentOutput(try_no=1, items=[item]), run_id="live-run", attempt_key="k#0")
    led.close()
    index = _fetch(server.url)[2].decode()
    assert "live-run" in index and "<body data-live" in index and ">running<" in index
    page = _fetch(server.url + "attempt?run=live-run&key=k%230")[2].decode()
    assert "&lt;b&gt;thinking&lt;/b&gt; about it" in page and "<body data-live" in page
    assert "not scored yet" in page
    run = _fetch(server.url + "run/live-run")[2].decode()
    assert "<body data-live" in run and ">running<" in run and "0/1" in run


def _heldout(
    led: Ledger, run_id: str, task: str, role: str, key: str | None, correct: bool
) -> None:
    eid = f"h-{role}-{key or task}"
    p = _started(led, run_id)
    led.append(
        ev.Scored(eval_id=eid, try_no=0, purpose="heldout", compiled=True, correct=correct,
                  speedup=1.1 if correct else None, score=0.0, policy=p.policy, policy_version=2,
                  policy_spec=parse_policy(p.policy).to_json(), components={}),
        run_id=run_id, attempt_key=key,
    )  # fmt: skip
    led.append(
        ev.HeldoutEvaluated(task=task, role=role, eval_id=eid, candidate="b3:" + "0" * 64,
                            task_tree=p.tasks[task], device=p.device, shapes=[{"N": 4099}]),
        run_id=run_id, attempt_key=key,
    )  # fmt: skip


def test_heldout_quadrants_appear_only_when_recorded(arena: Arena, tmp_path: Path) -> None:
    path = _copy(arena, tmp_path)
    assert 'id="heldout"' not in dashboard.run_page(_open(path), arena.run_id)
    led = _open(path)
    _heldout(led, arena.run_id, "torch/ops/affine", "baseline", None, True)
    _heldout(led, arena.run_id, "torch/ops/affine", "candidate", "torch/ops/affine#fast#0", False)
    _heldout(led, arena.run_id, "torch/ops/affine", "candidate", "torch/ops/affine#base#0", True)
    led.close()
    text = dashboard.run_page(_open(path), arena.run_id)
    section = text[text.index('id="heldout"') :]
    counts = re.findall(r'data-quadrant="(\w+)"><b>(\d+)</b>', section)
    got = {(i // 4, q): int(n) for i, (q, n) in enumerate(counts)}  # arms in planned order
    assert got[(0, "both_pass")] == 1 and got[(1, "regression")] == 1
    assert sum(got.values()) == 2


@given(st.one_of(st.none(), st.booleans()), st.one_of(st.none(), st.booleans()))
def test_quadrant_rule(baseline: Any, heldout: Any) -> None:
    q = quadrant(baseline, heldout)
    if baseline is None or heldout is None:
        assert q is None
    else:
        assert q == {(True, True): "both_pass", (True, False): "regression",
                     (False, True): "improvement", (False, False): "both_fail"}[(baseline, heldout)]  # fmt: skip


def test_compare_page_explains_a_side_it_cannot_find(arena: Arena) -> None:
    text = dashboard.compare_page(_open(arena.ledger), f"{arena.run_id}/base", "no-such-arm")
    assert "no-such-arm" in text and 'class="verdict' not in text


def test_cli_dashboard_serves_until_stopped(arena: Arena) -> None:
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aka.cli",
            "dashboard",
            "--ledger",
            str(arena.ledger),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        status, _, body = _fetch(url.group(0))
        assert status == 200 and arena.run_id.split("-")[0] in body.decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_only_loopback_hosts_count_as_local() -> None:
    from aka.cli._dashboard import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "::1", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.5", "example.org"]))


def test_cli_dashboard_without_a_ledger_is_a_clean_error(cli, tmp_path: Path) -> None:
    res = cli("dashboard", "--ledger", str(tmp_path / "none"), "--port", "0")
    assert res.code != 0 and "no ledger" in res.err and "Traceback" not in res.err


finite = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)
xml_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")))  # what XML can carry


@given(
    st.lists(st.tuples(xml_text, st.lists(finite, max_size=6)), min_size=1, max_size=4),
    st.booleans(),
)
def test_strip_plot_is_well_formed_svg_with_one_mark_per_value(groups: Any, log: bool) -> None:
    from xml.etree import ElementTree

    from aka.dashboard._svg import Point, strip_plot

    data = [(name, [Point(v, tip=name) for v in values]) for name, values in groups]
    out = strip_plot(data, label="x", log=log, ref=1.0 if log else None)
    n = sum(len(v) for _, v in groups)
    if n == 0:
        assert "no values" in out
        return
    root = ElementTree.fromstring(out)
    circles = root.findall(".//{http://www.w3.org/2000/svg}circle")
    assert len(circles) == n
    xs = [float(c.get("cx", "nan")) for c in circles]
    assert all(0 <= x <= 620 for x in xs)


def test_runs_with_one_label_are_told_apart_by_their_ids(arena: Arena) -> None:
    from aka.dashboard._links import Links
    from aka.dashboard._sections import leaderboard_table, matrix_table

    LIVE = Links(static=False)

    rows = leaderboard(connect(_open(arena.ledger)), [arena.run_id])
    twin = [{**r, "run_id": "20260101T000000-twin-abc123"} for r in rows]
    board = leaderboard_table([*rows, *twin], LIVE)
    assert arena.run_id in board and "20260101T000000-twin-abc123" in board
    cell = {"task": "t", "run_id": "twin-id", "arm": "base", "speedup": 1.0, "score": 220.0,
            "n_correct": 1, "n": 1, "best_attempt": "t#base#0"}  # fmt: skip
    matrix = matrix_table([cell], [(arena.run_id, LABEL, "base"), ("twin-id", LABEL, "base")], LIVE)
    head = matrix.split("</thead>")[0]
    assert ">twin-id<" in head and f">{arena.run_id}<" in head
