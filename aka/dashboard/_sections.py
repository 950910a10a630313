"""Run-level sections: runs, leaderboard, task matrix, attempts, distributions, held-out.

Each function takes rows from :mod:`aka.dashboard._data` and returns escaped HTML.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from aka.dashboard import _svg as svg
from aka.dashboard._data import QUADRANTS, Row
from aka.dashboard._html import (
    Column,
    badge,
    card,
    digest,
    h,
    link,
    num,
    pct,
    progress_bar,
    speedup,
    speedup_ci,
    table,
    yesno,
)
from aka.dashboard._links import Links
from aka.stats import DEFAULT_FLOOR

STATE_KIND = {"scored": "good", "error": "bad", "running": "info", "planned": ""}


def when(t: datetime | None) -> str:
    """A timestamp to the second, UTC."""
    return "–" if t is None else h(t.strftime("%Y-%m-%d %H:%M:%S"))


def runs_table(runs: Sequence[Row], links: Links) -> str:
    """Every run: status, progress, arms, tasks, device and times."""
    cols = [
        Column("run"),
        Column("status"),
        Column("progress"),
        Column("arms"),
        Column("tasks", "right"),
        Column("device"),
        Column("policy"),
        Column("started"),
        Column("last event"),
    ]
    body = []
    for r in runs:
        status = badge(r["status"], "info" if r["status"] == "running" else "good")
        prog = (
            progress_bar(r["scored"], r["attempts"], errors=r["errors"] or 0)
            + f' <span class="muted">{r["scored"]}/{r["attempts"]}'
            + (f", {r['errors']} failed" if r["errors"] else "")
            + "</span>"
        )
        name = link(links.run(r["run_id"]), f"<b>{h(r['label'])}</b>")
        body.append(
            [
                f'{name}<br><span class="muted mono">{h(r["run_id"])}</span>',
                status,
                prog,
                h(r["arms"]),
                str(r["tasks"]),
                h(r["device"]),
                h(r["policy"]),
                f'<span class="nowrap">{when(r["started_at"])}</span>',
                f'<span class="nowrap">{when(r["last_event"])}</span>',
            ]
        )
    return table(cols, body, empty="no runs in this ledger yet: start one with `aka run CONFIG`")


def _money(x: object) -> str:
    return "–" if not isinstance(x, int | float) else f"${x:,.2f}"


def leaderboard_table(rows: Sequence[Row], links: Links, *, show_run: bool = True) -> str:
    """Arms ranked by floored geometric-mean speedup; the best score links to its attempt."""
    cols = [Column("#", "right")]
    cols += [Column("run")] if show_run else []
    cols += [
        Column("arm"),
        Column("agent"),
        Column("scored", "right", "final scores / planned attempts"),
        Column("compiled", "right", "task-averaged share that compiled"),
        Column("correct", "right", "task-averaged share that passed correctness"),
        Column("fast_1.0", "right", "task-averaged share correct and faster than the baseline"),
        Column(
            "geomean speedup", "right", f"failures count at {DEFAULT_FLOOR}x; tasks weigh the same"
        ),
        Column("mean score", "right"),
        Column("best score", "right", "opens the attempt behind it"),
        Column("cost", "right"),
        Column("tokens in/out", "right"),
        Column("agent time", "right"),
    ]
    body = []
    for i, r in enumerate(rows, 1):
        best = (
            link(links.attempt(r["run_id"], r["best_attempt"]), num(r["best_score"], 1), cls="best")
            if r["best_attempt"]
            else "–"
        )
        cells = [str(i)]
        if show_run:
            cells.append(
                link(links.run(r["run_id"]), h(r["label"]))
                + f'<br><span class="muted mono">{h(r["run_id"])}</span>'
            )
        tokens = (
            "–"
            if r["tokens_in"] is None
            else f"{int(r['tokens_in']):,} / {int(r['tokens_out'] or 0):,}"
        )
        cells += [
            f"<b>{h(r['arm'])}</b>",
            h(r["agent"] or ""),
            f"{r['scored']}/{r['planned']}",
            pct(r["compiled"]),
            pct(r["correct"]),
            pct(r["fast_1"]),
            speedup(r["geomean_speedup"]),
            num(r["mean_score"], 1),
            best,
            _money(r["cost_usd"]),
            tokens,
            "–" if r["agent_wall_s"] is None else f"{r['agent_wall_s']:.1f} s",
        ]
        body.append(cells)
    attrs = [f'data-run="{h(r["run_id"])}" data-arm="{h(r["arm"])}"' for r in rows]
    return table(cols, body, cls="leaderboard", row_attrs=attrs, empty="no scored attempts yet")


def _cell_colour(s: float | None) -> str:
    if s is None or not math.isfinite(s) or s <= 0:
        return ""
    t = max(-1.0, min(1.0, math.log2(s)))  # 2x (or 0.5x) is full colour
    rgb = "22,163,74" if t > 0 else "234,88,12"
    return f' style="background:rgba({rgb},{abs(t) * 0.35 + 0.04:.2f})"'


def matrix_table(
    cells: Sequence[Row], columns: Sequence[tuple[str, str, str]], links: Links
) -> str:
    """Tasks down, (run, arm) across: floored geomean speedup, mean score, correct/n.

    Each cell is tinted by its speedup (green above 1×, orange below; full at 2× or
    0.5×) and links to the best-scoring attempt behind it.
    """
    by = {(c["task"], c["run_id"], c["arm"]): c for c in cells}
    tasks = sorted({c["task"] for c in cells})
    if not tasks:
        return '<p class="muted">no scored attempts yet</p>'
    head = "".join(
        f'<th class="center" title="{h(rid)}">{h(label)}<br>'
        f'<span class="muted mono">{h(rid)}</span><br><b>{h(arm)}</b></th>'
        for rid, label, arm in columns
    )
    body = []
    for task in tasks:
        tds = [f'<td><span class="mono">{h(task)}</span></td>']
        for rid, _, arm in columns:
            c = by.get((task, rid, arm))
            if c is None:
                tds.append('<td class="cell muted">–</td>')
                continue
            inner = (
                f"{speedup(c['speedup'])}"
                f'<span class="s">score {num(c["score"], 1)} · {c["n_correct"]}/{c["n"]} correct</span>'
            )
            href = links.attempt(rid, c["best_attempt"])
            tds.append(f'<td class="cell"{_cell_colour(c["speedup"])}>{link(href, inner)}</td>')
        body.append(f"<tr>{''.join(tds)}</tr>")
    return (
        f'<div class="scroll"><table class="matrix"><thead><tr><th>task</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def attempts_table(rows: Sequence[Row], links: Links) -> str:
    """Every planned attempt in run order, with its state and result."""
    cols = [
        Column("task"),
        Column("arm"),
        Column("rep", "right"),
        Column("state"),
        Column("compiled", "center"),
        Column("correct", "center"),
        Column("speedup", "right"),
        Column("score", "right"),
        Column("candidate"),
        Column("agent time", "right"),
        Column("tries", "right"),
        Column("error"),
    ]
    body = []
    for r in rows:
        flags = "".join(badge(f, "bad") for f in (r["hack_flags"] or []))
        err = (r["error"] or "")[:120]
        body.append(
            [
                link(
                    links.attempt(r["run_id"], r["attempt_key"]),
                    f'<span class="mono">{h(r["task"])}</span>',
                ),
                h(r["arm"]),
                str(r["repeat"]),
                badge(r["state"], STATE_KIND.get(r["state"], "")),
                yesno(r["compiled"]),
                yesno(r["correct"]),
                speedup_ci(r["speedup"], r["speedup_ci_low"], r["speedup_ci_high"], 2),
                num(r["score"], 1),
                digest(r["candidate"]),
                "–" if r["agent_wall_s"] is None else f"{r['agent_wall_s']:.1f} s",
                str(r["tries"] or "–"),
                flags + f'<span class="muted">{h(err)}</span>',
            ]
        )
    return table(cols, body, cls="attempts")


def distributions(rows: Sequence[Row], arms: Sequence[str], links: Links) -> str:
    """Speedup, correctness and cost per arm as inline SVG charts."""
    by_arm = {a: [r for r in rows if r["arm"] == a] for a in arms}
    speed, geo = [], {}
    for arm, rs in by_arm.items():
        pts = []
        logs = []
        for r in rs:
            if r["state"] != "scored":
                continue
            ok = bool(r["correct"]) and r["speedup"] is not None
            v = max(r["speedup"], DEFAULT_FLOOR) if ok else DEFAULT_FLOOR
            logs.append(math.log(v))
            tip = f"{r['task']} #{r['repeat']}: " + (f"{r['speedup']:.3f}x" if ok else "failed")
            pts.append(svg.Point(v, ok, links.attempt(r["run_id"], r["attempt_key"]), tip))
        speed.append((arm, pts))
        if logs:
            geo[arm] = math.exp(sum(logs) / len(logs))
    segs = []
    for arm, rs in by_arm.items():
        n = {s: sum(1 for r in rs if _outcome(r) == s) for s in ("ok", "wrong", "fail", "pending")}
        segs.append(
            (
                arm,
                [
                    svg.Segment(n["ok"], svg.GOOD, "correct"),
                    svg.Segment(n["wrong"], svg.WARN, "compiled, not correct"),
                    svg.Segment(n["fail"], svg.BAD, "did not compile or errored"),
                    svg.Segment(n["pending"], svg.GREY, "not scored yet"),
                ],
            )
        )
    use_cost = any((r["cost_usd"] or 0) > 0 for r in rows)
    key, unit = ("cost_usd", "$") if use_cost else ("agent_wall_s", "s")
    cost = [
        (
            arm,
            [
                svg.Point(
                    float(r[key]),
                    True,
                    links.attempt(r["run_id"], r["attempt_key"]),
                    f"{r['task']} #{r['repeat']}: {r[key]:.3g}{unit}",
                )
                for r in rs
                if r[key] is not None
            ],
        )
        for arm, rs in by_arm.items()
    ]
    legend = (
        '<div class="legend"><i style="background:#16a34a"></i>correct'
        '<i style="background:#f59e0b"></i>compiled, wrong<i style="background:#ea580c"></i>failed'
        '<i style="background:#cbd5e1"></i>pending</div>'
    )
    return (
        '<div class="grid wide">'
        + card(
            "Speedup per attempt",
            svg.strip_plot(speed, label="speedups", log=True, ref=1.0, unit="×", summary=geo),
            note=f"log scale; hollow = failed (placed at {DEFAULT_FLOOR}×); blue tick = geometric mean",
        )
        + card("Correctness", svg.stacked_bars(segs, label="correctness") + legend)
        + card(
            "Cost per attempt" if use_cost else "Agent time per attempt",
            svg.strip_plot(cost, label="cost", unit=unit, neutral=True),
            note="USD reported by the agent"
            if use_cost
            else "no agent reported a cost; wall seconds",
        )
        + "</div>"
    )


def _outcome(r: Row) -> str:
    if r["state"] != "scored":
        return "fail" if r["state"] == "error" else "pending"
    if r["correct"]:
        return "ok"
    return "wrong" if r["compiled"] else "fail"


QUAD_STYLE = {
    "both_pass": ("#dcfce7", "both pass"),
    "regression": ("#ffedd5", "regression"),
    "improvement": ("#dbeafe", "improvement"),
    "both_fail": ("#f2f4f7", "both fail"),
}


def heldout_section(rows: Sequence[Row], arms: Sequence[str], links: Links) -> str:
    """Per arm, a 2×2 of (baseline, candidate) correctness on held-out shapes, and the rows."""
    grids = []
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        if not mine:
            continue
        n = {q: sum(r["quadrant"] == q for r in mine) for q in QUADRANTS}
        passable = n["both_pass"] + n["regression"]
        cond = f"{n['both_pass'] / passable:.0%}" if passable else "–"

        def cell(q: str, n: dict[str, int] = n) -> str:
            colour, name = QUAD_STYLE[q]
            return f'<div style="background:{colour}" data-quadrant="{q}"><b>{n[q]}</b><br>{name}</div>'

        grids.append(
            f'<div><h3>{h(arm)}</h3><div class="quad">'
            '<div class="hd"></div><div class="hd">candidate passes</div><div class="hd">candidate fails</div>'
            f'<div class="hd">baseline passes</div>{cell("both_pass")}{cell("regression")}'
            f'<div class="hd">baseline fails</div>{cell("improvement")}{cell("both_fail")}</div>'
            f'<p class="note">P(candidate correct | baseline correct) = {cond}</p></div>'
        )
    cols = [
        Column("task"),
        Column("arm"),
        Column("quadrant"),
        Column("tuning", "right"),
        Column("held-out", "right"),
    ]
    body = [
        [
            link(
                links.attempt(r.get("run_id", ""), r["attempt_key"]),
                f'<span class="mono">{h(r["task"])}</span>',
            ),
            h(r["arm"]),
            badge(
                r["quadrant"] or "no held-out shapes",
                "bad" if r["quadrant"] == "regression" else "",
            ),
            speedup(r["tuning_speedup"]) if r["tuning_correct"] else yesno(False),
            speedup(r["heldout_speedup"]) if r["heldout_correct"] else yesno(r["heldout_correct"]),
        ]
        for r in rows
    ]
    return card(
        "Held-out shapes",
        '<div class="grid">' + "".join(grids) + "</div>" + table(cols, body),
        ident="heldout",
        note="each final candidate re-evaluated on shapes the agent never saw (`aka heldout`)",
    )
