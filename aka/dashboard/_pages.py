"""Whole pages: the runs index, a run, the task matrix, an A/B comparison, an attempt.

Each page function takes an open ledger, queries it afresh, and returns one HTML
document. :func:`render_static_report` puts a run's page and every attempt's page
into a single self-contained document.
"""

from __future__ import annotations

from typing import Any

from aka.dashboard import _data as data
from aka.dashboard._ab import compare_form, compare_refs, comparison_html, run_outcomes
from aka.dashboard._attempt import attempt_sections
from aka.dashboard._detail import RunEvents, attempt_detail, run_rows
from aka.dashboard._html import badge, card, digest, h, page, progress_bar
from aka.dashboard._links import Links, anchor
from aka.dashboard._sections import (
    attempts_table,
    distributions,
    heldout_section,
    leaderboard_table,
    matrix_table,
    runs_table,
    when,
)
from aka.errors import NotFoundError
from aka.report import connect
from aka_ledger import Ledger

LIVE = Links(static=False)
MATRIX_RUNS = 12
"""Most recent runs shown as columns of the task matrix."""


def index_page(ledger: Ledger) -> str:
    """Every run with its progress, and the leaderboard of every (run, arm)."""
    con = connect(ledger)
    runs = data.runs(con)
    board = data.leaderboard(con, [r["run_id"] for r in runs])
    body = card("Runs", runs_table(runs, LIVE), ident="runs") + card(
        "Leaderboard",
        leaderboard_table(board, LIVE),
        ident="leaderboard",
        note="every task weighs the same; failures count at 0.5×, as in `aka compare`; "
        "the best score opens the exact source behind it",
    )
    live = any(r["status"] == "running" for r in runs)
    return page("Runs", body, live=live, subtitle=f"ledger <code>{h(ledger.root)}</code>")


def _run_header(run: data.Row, links: Links) -> str:
    status = badge(run["status"], "info" if run["status"] == "running" else "good")
    pairs = [
        ("run", f'<span class="mono">{h(run["run_id"])}</span>'),
        ("status", status),
        ("progress", progress_bar(run["scored"], run["attempts"], errors=run["errors"] or 0)
         + f' {run["scored"]}/{run["attempts"]} scored' + (f", {run['errors']} failed" if run["errors"] else "")),
        ("device, policy", f"{h(run['device'])}, {h(run['policy'])}"),
        ("started, finished", f"{when(run['started_at'])} → {when(run['finished_at'])}"),
        ("config", digest(run["config_digest"], link=links.blob(run["config_digest"]), short=64)),
        ("harness", digest(run["harness_digest"], short=64)),
        ("environment", digest(run["environment_digest"], link=links.blob(run["environment_digest"]), short=64)),
    ]  # fmt: skip
    return card(
        "Run", '<dl class="kv">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"
    )


def _find_run(con: Any, run_id: str) -> data.Row:
    for r in data.runs(con):
        if r["run_id"] == run_id:
            return r
    raise NotFoundError(f"no run {run_id!r}", fix="pick a run on the runs page")


def run_body(con: Any, run_id: str, links: Links) -> tuple[data.Row, str]:
    """A run's sections: header, leaderboard, matrix, A/B, distributions, held-out, attempts."""
    run = _find_run(con, run_id)
    arms = data.arms_in_order(con, run_id)
    attempts = data.attempts(con, run_id)
    board = data.leaderboard(con, [run_id])
    cells = data.matrix(con, [run_id])
    parts = [
        _run_header(run, links),
        card("Leaderboard", leaderboard_table(board, links, show_run=False), ident="leaderboard",
             note="arms ranked by geometric-mean speedup; every task weighs the same; failures at 0.5×"),
        card("Tasks × arms", matrix_table(cells, [(run_id, run["label"], a) for a in arms], links),
             ident="matrix", note="geomean speedup per task (failures at 0.5×); a cell opens its best attempt"),
    ]  # fmt: skip
    parts += [comparison_html(o, links, full=True) for o in run_outcomes(con, run_id, arms)]
    parts.append(distributions(attempts, arms, links))
    held = data.heldout(con, run_id)
    if held is not None:
        parts.append(heldout_section(held, arms, links))
    parts.append(card("Attempts", attempts_table(attempts, links), ident="attempts"))
    return run, "".join(parts)


def run_page(ledger: Ledger, run: str) -> str:
    """One run, live while it is in progress."""
    con = connect(ledger)
    run_id = data.resolve(con, run)
    row, body = run_body(con, run_id, LIVE)
    return page(f"Run {row['label']}", body, live=row["status"] == "running", subtitle=h(run_id))


def matrix_page(ledger: Ledger) -> str:
    """Tasks × (run, arm) over the most recent runs."""
    con = connect(ledger)
    runs = data.runs(con)[:MATRIX_RUNS]
    cols = []
    for r in reversed(runs):
        cols += [(r["run_id"], r["label"], a) for a in data.arms_in_order(con, r["run_id"])]
    cells = data.matrix(con, [r["run_id"] for r in runs])
    body = card(
        "Tasks × runs",
        matrix_table(cells, cols, LIVE),
        ident="matrix",
        note=f"the {MATRIX_RUNS} most recent runs; geomean speedup (failures at 0.5×), mean score, correct/attempts",
    )
    live = any(r["status"] == "running" for r in runs)
    return page("Task matrix", body, live=live)


def compare_page(ledger: Ledger, a: str | None, b: str | None) -> str:
    """Pick two sides and see the paired comparison (the numbers of ``aka compare``)."""
    con = connect(ledger)
    refs: list[str] = []
    for r in data.runs(con):
        refs += [f"{r['run_id']}/{arm}" for arm in data.arms_in_order(con, r["run_id"])]
        refs.append(r["run_id"])
    if (a is None or b is None) and len(refs) >= 2:
        arm_refs = [x for x in refs if "/" in x]
        a, b = (arm_refs[0], arm_refs[1]) if len(arm_refs) >= 2 else (refs[0], refs[1])
    form = compare_form(refs, a or "", b or "")
    if not a or not b:
        return page("A/B", form + card("A/B", '<p class="muted">need two sides to compare</p>'))
    result = comparison_html(compare_refs(con, a, b), LIVE, full=True)
    return page("A/B", form + result, subtitle=f"B = {h(b)} against A = {h(a)}")


def attempt_page(ledger: Ledger, run: str, key: str) -> str:
    """One attempt: live until it is scored."""
    con = connect(ledger)
    run_id = data.resolve(con, run)
    row = next((r for r in data.attempts(con, run_id) if r["attempt_key"] == key), None)
    if row is None:
        raise NotFoundError(f"no attempt {key!r} in run {run_id}", fix="pick one on the run page")
    detail = attempt_detail(ledger, con, run_id, key, row)
    live = row["state"] in ("planned", "running")
    title = f"{row['task']} · {row['arm']} #{row['repeat']}"
    return page(title, attempt_sections(detail, LIVE), live=live, subtitle=h(key))


def render_static_report(ledger: Ledger, run_id: str) -> str:
    """A run's views as one self-contained HTML page (``aka report RUN --html FILE``).

    The run's sections come first; each attempt's page follows as an anchored section
    that the tables and charts link to. The page loads nothing from anywhere: styles
    and charts are inline, and it has no links to the live dashboard.

    Raises:
        NotFoundError: the ledger has no such run.
    """
    con = connect(ledger)
    run_id = data.resolve(con, run_id)
    links = Links(static=True)
    row, body = run_body(con, run_id, links)
    blocks = []
    events, pre = RunEvents(ledger, run_id).as_ledger(), run_rows(con, run_id)
    for a in data.attempts(con, run_id):
        detail = attempt_detail(events, con, run_id, a["attempt_key"], a, pre)
        title = f"{a['task']} · {a['arm']} #{a['repeat']}"
        blocks.append(
            f'<section class="attempt" id="{anchor(a["attempt_key"])}"><h1>{h(title)}</h1>'
            f'<p class="sub mono">{h(a["attempt_key"])} · <a href="#top">back to the run</a></p>'
            f"{attempt_sections(detail, links)}</section>"
        )
    top = f'<div id="top"></div>{body}'
    return page(f"Run {row['label']}", top + "".join(blocks), nav=False, subtitle=h(run_id))
