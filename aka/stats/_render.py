"""Render a :class:`Comparison` as text for a terminal (rendering kept apart from numbers)."""

from __future__ import annotations

import io
import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

from aka.stats._compare import Comparison
from aka.stats._summary import ArmSummary


def _num(x: float, digits: int = 3) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.{digits}f}"


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:.1f}%"


def _ci(ci: tuple[float, float], fmt: str = "num", *, n_tasks: int) -> str:
    """The interval's bounds, or why it has none (a bootstrap over tasks needs two)."""
    if not all(math.isfinite(x) for x in ci):
        return f"undefined ({n_tasks} task, needs 2+)" if n_tasks < 2 else "undefined"
    f = _pct if fmt == "pct" else _num
    return f"[{f(ci[0])}, {f(ci[1])}]"


def _who(s: ArmSummary) -> str:
    return f"{','.join(s.runs)} / {','.join(s.arms)}"


def _arm_rows(a: ArmSummary, b: ArmSummary) -> list[tuple[str, str, str]]:
    rows = [
        ("runs / arms", _who(a), _who(b)),
        ("tasks, attempts", f"{a.n_tasks}, {a.n_attempts}", f"{b.n_tasks}, {b.n_attempts}"),
        (
            "repeats per task",
            f"{a.repeats_min}-{a.repeats_max}",
            f"{b.repeats_min}-{b.repeats_max}",
        ),
        ("compiled", _pct(a.compiled_rate), _pct(b.compiled_rate)),
        ("correct", _pct(a.correct_rate), _pct(b.correct_rate)),
        ("correct, first try", _pct(a.correct_rate_first_try), _pct(b.correct_rate_first_try)),
        ("infra retries", str(a.infra_retries), str(b.infra_retries)),
    ]
    rows += [(f"fast_{p}", _pct(a.fast_p[p]), _pct(b.fast_p[p])) for p in a.fast_p]
    rows += [
        ("geomean speedup (floored)", _num(a.geomean_speedup), _num(b.geomean_speedup)),
        ("geomean, correct only", _num(a.geomean_speedup_correct), _num(b.geomean_speedup_correct)),
        ("mean score", _num(a.mean_score, 1), _num(b.mean_score, 1)),
    ]
    rows += [
        (f"pass@{k}", _pct(a.pass_at_k[k]), _pct(b.pass_at_k.get(k, math.nan))) for k in a.pass_at_k
    ]
    rows += [
        (
            "tokens in / out",
            f"{a.tokens_in:,} / {a.tokens_out:,}",
            f"{b.tokens_in:,} / {b.tokens_out:,}",
        ),
        ("cost (USD)", _num(a.cost_usd, 2), _num(b.cost_usd, 2)),
        ("agent wall (s)", _num(a.agent_wall_s, 0), _num(b.agent_wall_s, 0)),
        ("eval wall (s)", _num(a.eval_wall_s, 0), _num(b.eval_wall_s, 0)),
    ]
    return rows


def _paired_rows(cmp: Comparison) -> list[tuple[str, str]]:
    p = cmp.paired
    conf = f"{1 - cmp.alpha:.0%} CI"
    n = p.n_tasks
    return [
        (
            "tasks paired",
            f"{n} (B better {p.tasks_better}, worse {p.tasks_worse}, tied {p.tasks_tied})",
        ),
        (
            "speedup ratio B/A",
            f"{_num(p.speedup_ratio)}  {conf} {_ci(p.speedup_ratio_ci, n_tasks=n)}",
        ),
        (
            "delta log speedup",
            f"{_num(p.delta_log_speedup)}  {conf} {_ci(p.delta_log_speedup_ci, n_tasks=n)}",
        ),
        (
            "delta fast_1.0",
            f"{_pct(p.delta_fast_1)}  {conf} {_ci(p.delta_fast_1_ci, 'pct', n_tasks=n)}",
        ),
        ("permutation p", _num(p.permutation_p, 4)),
        ("Wilcoxon p", _num(p.wilcoxon_p, 4)),
        ("effect size", f"d_z {_num(p.cohens_dz, 2)}, rank-biserial {_num(p.rank_biserial, 2)}"),
        (
            "min detectable ratio",
            f"{_num(p.mde_ratio)} (power 0.8, {p.n_tasks} tasks, {p.repeats:.1f} repeats)",
        ),
    ]


def render_table(cmp: Comparison, *, width: int = 100) -> str:
    """The comparison as plain text tables (no color codes), ending with the verdict."""
    la, lb = cmp.labels
    arms = Table(title=Text(f"{la} vs {lb}: per arm (failures at speedup {cmp.floor:g})"))
    arms.add_column("metric")
    arms.add_column(Text(la), justify="right")
    arms.add_column(Text(lb), justify="right")
    # Cells are text, not Rich markup: an interval "[0.9, 1.1]" would read as a tag.
    for row in _arm_rows(cmp.a, cmp.b):
        arms.add_row(*(Text(cell) for cell in row))
    paired = Table(title=Text(f"paired per task ({lb} minus {la})"))
    paired.add_column("statistic")
    paired.add_column("value")
    for name, value in _paired_rows(cmp):
        paired.add_row(Text(name), Text(value))
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    console.print(arms)
    console.print(paired)
    for warning in cmp.warnings:
        console.print(f"WARNING (forced): {warning}", markup=False)
    console.print(f"verdict: {lb} vs {la}: {cmp.verdict}", markup=False)
    console.print(f"rule: {cmp.verdict_rule}", markup=False)
    return buf.getvalue()
