"""The dashboard in a real browser (Debian's Chromium driven by Playwright).

Every view loads without a script error and without a request leaving the server; a
click from the leaderboard reaches the exact source behind a score, with the digests
``aka audit`` verifies; the A/B verdict is the one ``aka compare`` prints; a page in
progress updates itself; the static report works from a file. With
``AKA_SCREENSHOTS=DIR`` the views are also saved as PNGs (docs/img holds a set).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from conftest import FAST_KERNEL, Arena

from aka import dashboard
from aka import events as ev
from aka.events import REGISTRY
from aka_ledger import Ledger

pytestmark = pytest.mark.browser


def _shot(page: Any, name: str, *, full: bool = False) -> None:
    where = os.environ.get("AKA_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"{name}.png"), full_page=full)


def _visit(page: Any, url: str) -> None:
    resp = page.goto(url)
    assert resp is not None and resp.ok, url
    assert page.locator("main h1").count() >= 1
    assert page.locator("main h2", has_text="Error").count() == 0


def _local_only(page: Any, base: str) -> None:
    outside = [u for u in page.requested if not u.startswith((base, "data:", "about:"))]
    assert not outside, outside
    assert not page.errors, page.errors


def test_every_view_loads(arena: Arena, serve, page: Any) -> None:
    server = serve(arena.ledger)
    base = server.url
    key = "torch/ops/affine#fast#0"
    views = {
        "runs": base,
        "run": f"{base}run/{quote(arena.run_id, safe='')}",
        "matrix": f"{base}matrix",
        "compare": f"{base}compare",
        "attempt": f"{base}attempt?run={quote(arena.run_id, safe='')}&key={quote(key, safe='')}",
    }
    for name, url in views.items():
        _visit(page, url)
        _shot(page, name)
    assert page.locator("#source table.files").count() == 3
    _visit(page, views["run"])
    assert page.locator("table.attempts tbody tr").count() == 8
    assert page.locator("svg[aria-label=speedups] a circle").count() == 8  # each dot links
    assert page.locator("table.matrix td.cell a").count() == 4  # 2 tasks x 2 arms
    _local_only(page, base)


def _audit_json(cli: Any, arena: Arena, key: str) -> tuple[str, list[dict[str, Any]]]:
    res = cli("audit", key, "--run", arena.run_id, "--ledger", str(arena.ledger), "-f", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)  # --format json prints one JSON document, nothing else
    return doc["evaluation"]["candidate"], doc["files"]


def test_leaderboard_click_reaches_the_exact_source(cli, arena: Arena, serve, page: Any) -> None:
    server = serve(arena.ledger)
    _visit(page, server.url)
    page.locator('table.leaderboard tr[data-arm="fast"] a.best').click()
    page.wait_for_url("**/attempt?*")
    key = parse_qs(urlsplit(page.url).query)["key"][0]
    candidate, files = _audit_json(cli, arena, key)
    shown = {
        (r.get_attribute("data-role"), r.get_attribute("data-path")): r.locator(
            "code.digest"
        ).get_attribute("data-digest")
        for r in page.locator("#source tr[data-role]").all()
    }
    assert shown == {(f["role"], f["path"]): f["digest"] for f in files}
    assert all(f["verified"] for f in files)
    assert page.locator("#score code.digest").first.get_attribute("data-digest") == candidate
    assert page.locator('pre.source[data-path="kernel.py"]').inner_text() == FAST_KERNEL
    assert "every digest verified" in page.locator("#source").inner_text()
    # the score on the page is the audited one
    score = page.locator("#score dd b").first.inner_text()
    board = cli("report", arena.run_id, "--ledger", str(arena.ledger), "-f", "json")
    row = next(r for r in json.loads(board.out) if r["attempt_key"] == key)
    assert score == f"{row['score']:.2f}"
    _local_only(page, server.url)


def _compare_json(cli: Any, arena: Arena) -> dict[str, Any]:
    res = cli(
        "compare", f"{arena.run_id}/base", f"{arena.run_id}/fast",
        "--ledger", str(arena.ledger), "--format", "json",
    )  # fmt: skip
    assert res.code == 0, res.err
    out: dict[str, Any] = json.loads(res.out)
    return out


def test_ab_verdict_matches_aka_compare(cli, arena: Arena, serve, page: Any) -> None:
    expected = _compare_json(cli, arena)
    server = serve(arena.ledger)
    _visit(page, f"{server.url}run/{quote(arena.run_id, safe='')}")
    verdict = page.locator(".verdict")
    assert verdict.get_attribute("data-verdict") == expected["verdict"]
    assert float(verdict.get_attribute("data-ratio")) == expected["paired"]["speedup_ratio"]
    lo, hi = expected["paired"]["speedup_ratio_ci"]
    assert f"[{lo:.3f}, {hi:.3f}]" in page.locator("#ab").inner_text()
    # the same comparison picked in the A/B form
    _visit(page, f"{server.url}compare")
    page.select_option("select[name=a]", f"{arena.run_id}/base")
    page.select_option("select[name=b]", f"{arena.run_id}/fast")
    page.click("form.ab button")
    page.wait_for_load_state()
    assert page.locator(".verdict").get_attribute("data-verdict") == expected["verdict"]
    assert float(page.locator(".verdict").get_attribute("data-ratio")) == pytest.approx(
        expected["paired"]["speedup_ratio"], rel=0, abs=0
    )
    _shot(page, "compare")
    _local_only(page, server.url)


def test_a_page_in_progress_updates_itself(arena: Arena, serve, page: Any, tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    shutil.copytree(arena.ledger, path)
    server = serve(path)
    led = Ledger.open(path, registry=REGISTRY, create=False)
    started = next(e.payload for e in led.events(types=["RunStarted"]))
    led.append(started, run_id="live-run")
    planned = ev.AttemptPlanned(
        task="torch/ops/affine", arm="base", agent="noop", repeat=0, order=0
    )
    led.append(planned, run_id="live-run", attempt_key="k#0")
    _visit(page, server.url)
    assert page.locator("body[data-live]").count() == 1
    page.evaluate("window.__same_document = true")
    led.append(ev.RunFinished(attempts=1, scored=0), run_id="live-run")
    led.close()
    for _ in range(100):  # the page polls every 4 s; the CSP forbids wait_for_function's eval
        if page.locator("body[data-live]").count() == 0:
            break
        page.wait_for_timeout(200)
    assert page.locator("body[data-live]").count() == 0
    assert page.evaluate("window.__same_document") is True  # swapped in place, not reloaded
    row = page.locator("main table tr", has_text="live-run").first  # the runs table's row
    assert "finished" in row.inner_text()
    _local_only(page, server.url)


def test_static_report_works_from_a_file(arena: Arena, page: Any, tmp_path: Path) -> None:
    led = Ledger.open(arena.ledger, registry=REGISTRY, create=False)
    report = tmp_path / "report.html"
    report.write_text(dashboard.render_static_report(led, arena.run_id))
    page.goto(report.as_uri())
    page.locator('table.leaderboard tr[data-arm="fast"] a.best').click()
    target = urlsplit(page.url).fragment
    assert target.startswith("attempt-")
    section = page.locator(f"section#{target}")
    assert section.is_visible() and "every digest verified" in section.inner_text()
    _shot(page, "static-report")
    _local_only(page, report.as_uri())
