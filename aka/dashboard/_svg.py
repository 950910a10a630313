"""Inline SVG charts: strip plots, interval (error-bar) plots and stacked bars.

Charts are plain SVG strings built server-side, so a page is one self-contained
document that renders the same in the live dashboard and in a saved report. Every mark
carries a ``<title>`` tooltip with its exact value; labels go through :func:`h`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from aka.dashboard._html import h

WIDTH = 620
LEFT = 130
RIGHT = 20
ROW = 34
TOP = 8
AXIS = 26

GOOD = "#16a34a"
BAD = "#ea580c"
WARN = "#f59e0b"
GREY = "#cbd5e1"
ACCENT = "#2563eb"


@dataclass(frozen=True)
class Point:
    """One mark of a strip plot: a value, whether it counts as good, an optional link."""

    value: float
    ok: bool = True
    href: str | None = None
    tip: str = ""


@dataclass(frozen=True)
class Interval:
    """One row of an interval plot: an estimate with its confidence interval."""

    label: str
    estimate: float
    low: float | None
    high: float | None
    tip: str = ""


@dataclass(frozen=True)
class Segment:
    """One part of a stacked bar."""

    count: int
    color: str
    label: str


class _Scale:
    """Maps data values to x pixels, linear or logarithmic."""

    def __init__(self, lo: float, hi: float, *, log: bool) -> None:
        self.log = log
        if log:
            lo, hi = math.log(max(lo, 1e-12)), math.log(max(hi, 1e-12))
        if hi - lo < 1e-9:
            lo, hi = lo - 1.0, hi + 1.0
        pad = (hi - lo) * 0.06
        self.lo, self.hi = lo - pad, hi + pad

    def x(self, value: float) -> float:
        v = math.log(max(value, 1e-12)) if self.log else value
        return LEFT + (v - self.lo) / (self.hi - self.lo) * (WIDTH - LEFT - RIGHT)

    def ticks(self) -> list[float]:
        if self.log:
            lo, hi = math.exp(self.lo), math.exp(self.hi)
            out = [c for c in (2.0**k for k in range(-10, 11)) if lo <= c <= hi]
            if len(out) >= 3:
                return out
            return _linear_ticks(lo, hi)  # a narrow range: evenly spaced values read better
        return _linear_ticks(self.lo, self.hi)


def _linear_ticks(lo: float, hi: float) -> list[float]:
    step = _nice_step((hi - lo) / 4)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(7) if first + i * step <= hi]


def _nice_step(raw: float) -> float:
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _fmt_tick(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100 or abs(v) < 0.01:
        return f"{v:.2g}"
    return f"{v:g}" if abs(v - round(v, 2)) < 1e-9 else f"{v:.2f}"


def _frame(scale: _Scale, rows: int, unit: str, ref: float | None) -> tuple[list[str], int]:
    height = TOP + rows * ROW + AXIS
    base = TOP + rows * ROW
    parts = [f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base}" y2="{base}"/>']
    for t in scale.ticks():
        x = scale.x(t)
        parts.append(
            f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{base}" opacity=".35"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{base + 15}" text-anchor="middle">{_fmt_tick(t)}{h(unit)}</text>'
        )
    if ref is not None:
        x = scale.x(ref)
        parts.append(f'<line class="ref" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{base}"/>')
    return parts, height


def _svg(parts: list[str], height: int, label: str) -> str:
    return (
        f'<svg role="img" aria-label="{h(label)}" viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" style="max-width:{WIDTH}px" xmlns="http://www.w3.org/2000/svg">'
        + "".join(parts)
        + "</svg>"
    )


def _row_label(i: int, text: str) -> str:
    y = TOP + i * ROW + ROW / 2 + 4
    short = text if len(text) <= 20 else text[:19] + "…"
    return f'<text x="{LEFT - 10}" y="{y:.1f}" text-anchor="end"><title>{h(text)}</title>{h(short)}</text>'


def strip_plot(
    groups: Sequence[tuple[str, Sequence[Point]]],
    *,
    label: str,
    log: bool = False,
    ref: float | None = None,
    unit: str = "",
    summary: dict[str, float] | None = None,
    neutral: bool = False,
) -> str:
    """One row per group, one dot per value; ``summary`` marks a per-group tick (e.g. a geomean).

    ``neutral`` draws every dot in the accent colour, for values (time, cost) that are
    neither good nor bad.
    """
    values = [p.value for _, pts in groups for p in pts if math.isfinite(p.value)]
    if not values:
        return '<p class="muted">no values yet</p>'
    lo, hi = min(values), max(values)
    if ref is not None:
        lo, hi = min(lo, ref), max(hi, ref)
    if not log:
        lo = min(lo, 0.0)
    scale = _Scale(lo, hi, log=log)
    parts, height = _frame(scale, len(groups), unit, ref)
    for i, (name, pts) in enumerate(groups):
        parts.append(_row_label(i, name))
        mid = TOP + i * ROW + ROW / 2
        for j, p in enumerate(pts):
            if not math.isfinite(p.value):
                continue
            y = mid + ((j * 7) % 15 - 7) * 0.8  # deterministic jitter keeps ties visible
            color = ACCENT if neutral else GOOD if p.ok else BAD
            fill = color if p.ok else "#fff"
            dot = (
                f'<circle cx="{scale.x(p.value):.1f}" cy="{y:.1f}" r="4.5" fill="{fill}" '
                f'fill-opacity=".75" stroke="{color}" stroke-width="1.5">'
                f"<title>{h(p.tip or _fmt_tick(p.value))}</title></circle>"
            )
            parts.append(f'<a href="{h(p.href)}">{dot}</a>' if p.href else dot)
        if summary and name in summary and math.isfinite(summary[name]):
            x = scale.x(summary[name])
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{mid - 11:.1f}" y2="{mid + 11:.1f}" '
                f'stroke="{ACCENT}" stroke-width="2.5"><title>{h(name)}: '
                f"{summary[name]:.3f}{h(unit)}</title></line>"
            )
    return _svg(parts, height, label)


def interval_plot(
    rows: Sequence[Interval],
    *,
    label: str,
    log: bool = True,
    ref: float | None = 1.0,
    unit: str = "",
) -> str:
    """Estimates with error bars (confidence intervals), one row each."""
    vals = [
        v for r in rows for v in (r.estimate, r.low, r.high) if v is not None and math.isfinite(v)
    ]
    if not vals:
        return '<p class="muted">no measurements</p>'
    lo, hi = min(vals), max(vals)
    if ref is not None:
        lo, hi = min(lo, ref), max(hi, ref)
    scale = _Scale(lo, hi, log=log)
    parts, height = _frame(scale, len(rows), unit, ref)
    for i, r in enumerate(rows):
        parts.append(_row_label(i, r.label))
        y = TOP + i * ROW + ROW / 2
        color = GOOD if ref is None or r.estimate >= ref else BAD
        if r.low is not None and r.high is not None:
            x1, x2 = scale.x(r.low), scale.x(r.high)
            parts.append(
                f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{color}" stroke-width="2"/>'
            )
            for x in (x1, x2):
                parts.append(
                    f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 6:.1f}" y2="{y + 6:.1f}" stroke="{color}" stroke-width="2"/>'
                )
        tip = r.tip or f"{r.estimate:.4g}"
        parts.append(
            f'<circle cx="{scale.x(r.estimate):.1f}" cy="{y:.1f}" r="5" fill="{color}">'
            f"<title>{h(tip)}</title></circle>"
        )
    return _svg(parts, height, label)


def stacked_bars(groups: Sequence[tuple[str, Sequence[Segment]]], *, label: str) -> str:
    """One horizontal bar per group, split into coloured counts (widths are shares)."""
    if not groups:
        return '<p class="muted">no attempts yet</p>'
    height = TOP + len(groups) * ROW + 6
    parts: list[str] = []
    span = WIDTH - LEFT - RIGHT
    for i, (name, segs) in enumerate(groups):
        parts.append(_row_label(i, name))
        total = sum(s.count for s in segs) or 1
        x = float(LEFT)
        y = TOP + i * ROW + 8
        for s in segs:
            if s.count <= 0:
                continue
            w = span * s.count / total
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{ROW - 16}" fill="{s.color}" rx="3">'
                f"<title>{h(s.label)}: {s.count} of {total}</title></rect>"
            )
            if w > 26:
                parts.append(
                    f'<text x="{x + w / 2:.1f}" y="{y + ROW / 2 - 4:.1f}" text-anchor="middle" '
                    f'style="fill:#fff;font-weight:600">{s.count}</text>'
                )
            x += w
    return _svg(parts, height, label)
