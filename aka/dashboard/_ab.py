"""The A/B view: :func:`aka.stats.compare` on the same attempt table ``aka compare`` uses.

Sides are named as on the command line (``RUN``, ``RUN/ARM`` or an arm name) and the
comparison runs with the CLI's defaults, so the verdict, ratio and intervals shown
here are the numbers ``aka compare A B --format json`` prints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from aka.dashboard._data import resolve
from aka.dashboard._html import Column, card, ci, h, link, num, pct, speedup, table
from aka.dashboard._links import Links
from aka.dashboard._svg import Interval, interval_plot
from aka.errors import AkaError, NotFoundError
from aka.stats import Comparison, compare, select_attempts


@dataclass(frozen=True)
class Outcome:
    """A comparison of side B against side A, or why there is none."""

    a: str
    b: str
    result: Comparison | None
    problem: str = ""


def resolve_ref(con: Any, ref: str) -> str:
    """Expand a run prefix or label in ``RUN`` or ``RUN/ARM`` (as ``aka compare`` does)."""
    run, slash, arm = ref.rpartition("/")
    head = run if slash else ref
    try:
        rid = resolve(con, head)
    except NotFoundError:
        return ref  # an arm name; aka.stats resolves (or rejects) it
    return f"{rid}/{arm}" if slash else rid


def scores_table(con: Any) -> pl.DataFrame:
    """The final-attempt table ``aka compare`` reads (the ``scores`` view, every run).

    ``aka compare`` builds it with :func:`aka.tables.attempt_table` (``turns=False``),
    which adds prompt and response texts that :func:`aka.stats.compare` never reads;
    leaving them out spares a blob read per attempt on every page view.
    """
    frame = pl.from_arrow(con.sql("SELECT * FROM scores").to_arrow_table())
    assert isinstance(frame, pl.DataFrame)
    return frame


def compare_refs(con: Any, a: str, b: str, table: pl.DataFrame | None = None) -> Outcome:
    """Compare ``b`` against ``a``; an input problem becomes :attr:`Outcome.problem`.

    A page has no ``--force`` to pass, so setup differences (harness, policy, device,
    task sets) never block it: the comparison runs and shows each difference as a
    warning above the numbers. What no flag can fix (a side compared with itself, no
    common task, an unknown run) is still the page's message.
    """
    try:
        table = scores_table(con) if table is None else table
        result = compare(
            select_attempts(table, resolve_ref(con, a)),
            select_attempts(table, resolve_ref(con, b)),
            labels=(a, b),
            force=True,
        )
    except AkaError as exc:
        return Outcome(a, b, None, str(exc))
    except ValueError as exc:  # e.g. too few tasks for a test; say so instead of failing the page
        return Outcome(a, b, None, f"cannot compare yet: {exc}")
    return Outcome(a, b, result)


def run_outcomes(con: Any, run_id: str, arms: Sequence[str]) -> list[Outcome]:
    """Each later arm of a run against its first arm (planned order)."""
    if len(arms) < 2:
        return []
    table = scores_table(con)
    return [compare_refs(con, f"{run_id}/{arms[0]}", f"{run_id}/{b}", table) for b in arms[1:]]


VERDICT_CLASS = {"better": "better", "worse": "worse"}
VERDICT_TEXT = {"better": "B is better", "worse": "B is worse"}


def short_labels(a: str, b: str) -> tuple[str, str]:
    """Side names for headings: just the arms when both sides are arms of one run."""
    ra, _, arm_a = a.rpartition("/")
    rb, _, arm_b = b.rpartition("/")
    if ra and ra == rb:
        return arm_a, arm_b
    return a, b


def _ratio(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.3f}×"


def _ratio_plot(c: Comparison) -> str:
    """The B/A ratio with its CI over tasks, then each task's own ratio."""
    p = c.paired
    rows = [Interval("all tasks (CI)", p.speedup_ratio, *p.speedup_ratio_ci)]
    rows += [Interval(t.task, math.exp(t.delta_log_speedup), None, None) for t in c.tasks[:12]]
    return interval_plot(rows, label="speedup ratio B/A", unit="×")


def _arm_rows(c: Comparison) -> list[list[str]]:
    a, b = c.a, c.b
    rows = [
        ["tasks, attempts", f"{a.n_tasks}, {a.n_attempts}", f"{b.n_tasks}, {b.n_attempts}"],
        ["compiled", pct(a.compiled_rate), pct(b.compiled_rate)],
        ["correct", pct(a.correct_rate), pct(b.correct_rate)],
        ["correct, first try", pct(a.correct_rate_first_try), pct(b.correct_rate_first_try)],
    ]
    rows += [[f"fast_{p}", pct(a.fast_p[p]), pct(b.fast_p.get(p))] for p in a.fast_p]
    rows += [
        ["geomean speedup (floored)", speedup(a.geomean_speedup), speedup(b.geomean_speedup)],
        [
            "geomean, correct only",
            speedup(a.geomean_speedup_correct),
            speedup(b.geomean_speedup_correct),
        ],
        ["mean score", num(a.mean_score, 1), num(b.mean_score, 1)],
    ]
    rows += [[f"pass@{k}", pct(a.pass_at_k[k]), pct(b.pass_at_k.get(k))] for k in a.pass_at_k]
    rows += [
        [
            "tokens in / out",
            f"{a.tokens_in:,} / {a.tokens_out:,}",
            f"{b.tokens_in:,} / {b.tokens_out:,}",
        ],
        ["cost (USD)", num(a.cost_usd, 2), num(b.cost_usd, 2)],
        ["agent wall (s)", num(a.agent_wall_s, 0), num(b.agent_wall_s, 0)],
    ]
    return [[f'<span class="nowrap">{h(r[0])}</span>', r[1], r[2]] for r in rows]


def comparison_html(out: Outcome, links: Links, *, full: bool = True) -> str:
    """One comparison: the verdict first, then the paired statistics and the per-arm table."""
    la, lb = short_labels(out.a, out.b)
    title = f"{lb} vs {la}"
    if out.result is None:
        return card(f"A/B: {title}", f'<p class="muted">{h(out.problem)}</p>')
    c, p = out.result, out.result.paired
    conf = f"{1 - c.alpha:.0%} CI"
    v = c.verdict
    head = (
        f'<div class="verdict {VERDICT_CLASS.get(v, "none")}" data-verdict="{h(v)}" '
        f'data-ratio="{p.speedup_ratio!r}" data-a="{h(out.a)}" data-b="{h(out.b)}">'
        f"{h(VERDICT_TEXT.get(v, v))}</div>"
    )
    stats = [
        ("speedup ratio B/A", f"<b>{_ratio(p.speedup_ratio)}</b> {conf} {ci(*p.speedup_ratio_ci)}"),
        ("delta log speedup", f"{num(p.delta_log_speedup)} {conf} {ci(*p.delta_log_speedup_ci)}"),
        ("delta fast_1.0", f"{pct(p.delta_fast_1)} {conf} {ci(*p.delta_fast_1_ci, percent=True)}"),
        ("permutation p", num(p.permutation_p, 4)),
        ("Wilcoxon p", num(p.wilcoxon_p, 4)),
        (
            "tasks paired",
            f"{p.n_tasks} (B better {p.tasks_better}, worse {p.tasks_worse}, tied {p.tasks_tied})",
        ),
        ("min detectable ratio", f"{_ratio(p.mde_ratio)} (power 0.8, {p.repeats:.1f} repeats)"),
    ]
    kv = '<dl class="kv">' + "".join(f"<dt>{h(k)}</dt><dd>{val}</dd>" for k, val in stats) + "</dl>"
    kv = f'<div class="grid"><div>{kv}</div><div>{_ratio_plot(c)}</div></div>'
    more = link(links.compare(out.a, out.b), "open the full comparison →")
    warn = "".join(
        f'<p class="setup-warning" data-warning="setup">warning: {h(w)}; the numbers below may '
        "reflect the setup as well as the agents</p>"
        for w in c.warnings
    )
    body = warn + head + kv
    if full:
        arms = table(
            [Column("metric"), Column(f"A: {la}", "right"), Column(f"B: {lb}", "right")],
            _arm_rows(c),
        )
        tasks = table(
            [
                Column("task"),
                Column("A", "right"),
                Column("B", "right"),
                Column("B/A", "right"),
                Column("repeats", "right"),
            ],
            [
                [
                    f'<span class="mono">{h(t.task)}</span>',
                    speedup(math.exp(t.log_speedup_a)),
                    speedup(math.exp(t.log_speedup_b)),
                    _ratio(math.exp(t.delta_log_speedup)),
                    f"{t.n_a} / {t.n_b}",
                ]
                for t in c.tasks
            ],
        )
        body += f'<div class="grid"><div><h3>per arm</h3>{arms}</div><div><h3>per task (geomean, floored)</h3>{tasks}</div></div>'
    elif more != "open the full comparison →":
        body += f"<p>{more}</p>"
    body += f'<p class="note">rule: {h(c.verdict_rule)}</p>'
    return card(f"A/B: {title}", body, ident="ab")


def compare_form(refs: Sequence[str], a: str, b: str) -> str:
    """Two selects of sides (``RUN/ARM`` and whole runs) and a button."""

    def select(name: str, chosen: str) -> str:
        opts = "".join(
            f'<option value="{h(r)}"{" selected" if r == chosen else ""}>{h(r)}</option>'
            for r in refs
        )
        return f'<label>{name.upper()} <select name="{name}">{opts}</select></label>'

    return (
        f'<form class="ab card" method="get" action="/compare">{select("a", a)}{select("b", b)}'
        '<button type="submit">Compare</button></form>'
    )
