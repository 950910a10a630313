"""HTML building blocks: escaping, number formats, tables, the page shell and its CSS.

Every value that reaches a page goes through :func:`h` (or a formatter that calls it),
so task names, agent output and source code can never inject markup. Styles and the
little script are inline: a page needs no network and no other file.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode


def h(value: object) -> str:
    """Escape any value for HTML text or a quoted attribute (None becomes empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def num(x: Any, digits: int = 3) -> str:
    """A float with ``digits`` decimals, or an en dash when missing or not finite."""
    if x is None or not isinstance(x, int | float) or not math.isfinite(float(x)):
        return "–"
    return f"{float(x):.{digits}f}"


def pct(x: Any) -> str:
    """A share in [0, 1] as a percentage."""
    if x is None or not isinstance(x, int | float) or not math.isfinite(float(x)):
        return "–"
    return f"{100 * float(x):.0f}%"


def speedup(x: Any) -> str:
    """A speedup as ``1.23×``, uncoloured: without an interval it is no evidence either way.

    :func:`speedup_ci` colours a speedup whose interval excludes 1.
    """
    if x is None or not isinstance(x, int | float) or not math.isfinite(float(x)):
        return '<span class="muted">–</span>'
    return f'<span class="flat">{float(x):.3f}×</span>'


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(float(x))


def ci(low: Any, high: Any, digits: int = 3, *, percent: bool = False) -> str:
    """A confidence interval as ``[low, high]`` in muted text (shares as percentages).

    An interval without two finite bounds says "CI undefined" rather than showing
    nothing, so a reader never takes a missing interval for a narrow one.
    """
    if not (_finite(low) and _finite(high)):
        return '<span class="muted ci">CI undefined</span>'
    lo, hi = (pct(low), pct(high)) if percent else (num(low, digits), num(high, digits))
    return f'<span class="muted ci">[{lo}, {hi}]</span>'


def speedup_ci(x: Any, low: Any, high: Any, digits: int = 3) -> str:
    """A measured speedup with its interval, coloured only when the interval excludes 1.

    A speedup of 1.3x whose interval spans 1 is not evidence of a faster kernel, so it
    stays uncoloured; an attempt with no speedup (it failed) shows a dash and no interval.
    """
    if not _finite(x):
        return '<span class="muted">–</span>'
    cls = "flat"
    if _finite(low) and _finite(high):
        cls = "good" if float(low) > 1 else "bad" if float(high) < 1 else "flat"
    return f'<span class="{cls}">{float(x):.3f}×</span>' + ci(low, high, digits)


def digest(d: Any, *, link: str | None = None, short: int = 12) -> str:
    """A content digest, shortened for reading with the full value in a tooltip.

    The full digest also sits in ``data-digest`` so tests and scripts can read it.
    """
    if not d:
        return '<span class="muted">–</span>'
    full = str(d)
    text = full[: 3 + short] if full.startswith("b3:") else full[:short]
    inner = f'<code class="digest" title="{h(full)}" data-digest="{h(full)}">{h(text)}</code>'
    return f'<a href="{h(link)}">{inner}</a>' if link else inner


def yesno(value: Any) -> str:
    """A boolean as a coloured check or cross (missing stays blank)."""
    if value is None:
        return '<span class="muted">–</span>'
    return '<span class="good">✓</span>' if value else '<span class="bad">✗</span>'


def badge(text: str, kind: str = "") -> str:
    """A small rounded label; ``kind`` picks the colour (good, bad, warn, info)."""
    return f'<span class="badge {h(kind)}">{h(text)}</span>'


def link(href: str | None, text: str, *, cls: str = "") -> str:
    """An anchor around already-escaped ``text`` (plain text when there is no target)."""
    if not href:
        return text
    attr = f' class="{h(cls)}"' if cls else ""
    return f'<a href="{h(href)}"{attr}>{text}</a>'


def path_part(value: str) -> str:
    """One URL path segment (slashes escaped too)."""
    return quote(value, safe="")


def query(**params: str) -> str:
    """A query string from keyword arguments."""
    return "?" + urlencode(params)


@dataclass(frozen=True)
class Column:
    """One table column: header text, alignment and an optional tooltip."""

    title: str
    align: str = "left"
    tip: str = ""


def table(
    columns: Sequence[Column | str],
    rows: Iterable[Sequence[str]],
    *,
    cls: str = "",
    row_attrs: Sequence[str] | None = None,
    empty: str = "nothing yet",
) -> str:
    """A table of already-rendered cells (callers escape with :func:`h`)."""
    cols = [c if isinstance(c, Column) else Column(c) for c in columns]
    head = "".join(
        f'<th class="{c.align}"' + (f' title="{h(c.tip)}"' if c.tip else "") + f">{h(c.title)}</th>"
        for c in cols
    )
    body = []
    for i, row in enumerate(rows):
        attrs = f" {row_attrs[i]}" if row_attrs and i < len(row_attrs) else ""
        cells = "".join(
            f'<td class="{c.align}">{cell}</td>' for c, cell in zip(cols, row, strict=True)
        )
        body.append(f"<tr{attrs}>{cells}</tr>")
    if not body:
        body.append(f'<tr><td class="muted" colspan="{len(cols)}">{h(empty)}</td></tr>')
    return (
        f'<div class="scroll"><table class="{h(cls)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def card(title: str, body: str, *, ident: str = "", note: str = "") -> str:
    """A titled section; ``note`` is a one-line explanation under the title."""
    idattr = f' id="{h(ident)}"' if ident else ""
    sub = f'<p class="note">{note}</p>' if note else ""
    return f'<section class="card"{idattr}><h2>{h(title)}</h2>{sub}{body}</section>'


def progress_bar(done: int, total: int, *, errors: int = 0) -> str:
    """A thin bar of scored (and failed) attempts out of planned ones."""
    total = max(total, 1)
    ok_w = 100 * max(done - errors, 0) / total
    err_w = 100 * min(errors, done) / total
    return (
        f'<div class="bar" title="{done}/{total} scored">'
        f'<span class="ok" style="width:{ok_w:.1f}%"></span>'
        f'<span class="err" style="width:{err_w:.1f}%"></span></div>'
    )


LIVE_SCRIPT = """
(function () {
  if (!document.body.dataset.live) return;
  var timer = setInterval(function () {
    fetch(location.href, {cache: "no-store"}).then(function (r) { return r.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.querySelector("main");
        if (fresh) document.querySelector("main").replaceWith(fresh);
        if (!doc.body.dataset.live) { clearInterval(timer); document.body.removeAttribute("data-live"); }
      }).catch(function () {});
  }, 4000);
})();
"""

CSS = """
:root { --bg:#f6f7f9; --card:#fff; --ink:#1f2328; --muted:#667085; --line:#e4e7ec;
  --accent:#2563eb; --good:#15803d; --bad:#c2410c; --warn:#b45309; --head:#101828; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font: 14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", Inter, "Helvetica Neue", Arial, sans-serif; }
header.top { background:var(--head); color:#fff; padding:10px 24px; display:flex; gap:24px; align-items:center; }
header.top .brand { font-weight:700; letter-spacing:.5px; font-size:16px; color:#fff; text-decoration:none; }
header.top nav a { color:#cbd5e1; text-decoration:none; margin-right:16px; }
header.top nav a:hover { color:#fff; }
header.top .live { margin-left:auto; font-size:12px; color:#86efac; }
main { max-width:1280px; margin:0 auto; padding:20px 24px 48px; }
h1 { font-size:22px; margin:4px 0 2px; font-weight:650; }
h2 { font-size:15px; margin:0 0 10px; font-weight:650; }
h3 { font-size:13px; margin:14px 0 6px; color:var(--muted); text-transform:uppercase; letter-spacing:.4px; }
h3 code, h3 a { text-transform:none; letter-spacing:0; }
.sub { color:var(--muted); margin:0 0 16px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:16px 18px; margin:0 0 16px;
  box-shadow:0 1px 2px rgba(16,24,40,.04); }
.grid { display:grid; grid-template-columns:repeat(auto-fit, minmax(340px, 1fr)); gap:16px; }
.grid .card { margin:0; }
.grid.wide { grid-template-columns:repeat(auto-fit, minmax(560px, 1fr)); margin-bottom:16px; }
.nowrap { white-space:nowrap; }
.note { color:var(--muted); margin:-4px 0 10px; font-size:12.5px; }
.scroll { overflow-x:auto; }
table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums; }
th { text-align:left; font-weight:600; color:var(--muted); font-size:12px; border-bottom:1px solid var(--line);
  padding:6px 10px; white-space:nowrap; }
td { padding:6px 10px; border-bottom:1px solid #f0f2f5; vertical-align:top; }
tbody tr:hover { background:#f8fafc; }
table.files th:nth-child(1) { width:30%; } table.files th:nth-child(3) { width:90px; }
table.files th:nth-child(4) { width:80px; }
.right { text-align:right; } .center { text-align:center; }
a { color:var(--accent); text-decoration:none; } a:hover { text-decoration:underline; }
code, pre, .mono { font-family: "JetBrains Mono", "SFMono-Regular", Menlo, Consolas, monospace; font-size:12.5px; }
code.digest { color:#475467; background:#f2f4f7; padding:1px 5px; border-radius:4px; }
pre { background:#0f172a; color:#e2e8f0; padding:12px 14px; border-radius:8px; overflow:auto; max-height:520px; margin:6px 0; }
pre.diff .add { color:#86efac; } pre.diff .del { color:#fca5a5; } pre.diff .hunk { color:#93c5fd; }
.good { color:var(--good); font-weight:600; } .bad { color:var(--bad); font-weight:600; }
.setup-warning { color:#92400e; background:#fef3c7; padding:6px 10px; border-radius:6px; }
.flat { color:var(--ink); } .muted { color:var(--muted); } .ci { font-size:12px; margin-left:4px; }
.badge { display:inline-block; padding:1px 8px; border-radius:999px; font-size:11.5px; font-weight:600;
  background:#eef2f6; color:#344054; }
.badge.good { background:#dcfce7; color:#166534; } .badge.bad { background:#ffedd5; color:#9a3412; }
.badge.warn { background:#fef3c7; color:#92400e; } .badge.info { background:#dbeafe; color:#1e40af; }
.bar { width:140px; height:8px; background:#eef2f6; border-radius:99px; overflow:hidden; display:inline-flex; vertical-align:middle; }
.bar .ok { background:#22c55e; } .bar .err { background:#f97316; }
.kv { display:grid; grid-template-columns:max-content 1fr; gap:4px 18px; margin:0; }
.kv dt { color:var(--muted); } .kv dd { margin:0; }
.verdict { font-size:18px; font-weight:700; padding:10px 14px; border-radius:8px; display:inline-block; margin:4px 0 8px; }
.verdict.better { background:#dcfce7; color:#166534; } .verdict.worse { background:#ffedd5; color:#9a3412; }
.verdict.none { background:#eef2f6; color:#344054; }
td.cell { text-align:center; min-width:92px; }
td.cell .s { font-size:11.5px; color:var(--muted); display:block; }
.items .item { border-left:3px solid var(--line); padding:4px 10px; margin:6px 0; }
.items .item.message { border-color:#60a5fa; } .items .item.tool_call { border-color:#a78bfa; }
.items .item.tool_result { border-color:#94a3b8; } .items .item.error { border-color:#f97316; }
.items .item.file_edit { border-color:#22c55e; } .items .item.thinking { border-color:#e5e7eb; color:var(--muted); }
.items .item pre { max-height:240px; }
.items .kind { font-size:11px; text-transform:uppercase; letter-spacing:.4px; color:var(--muted); }
details summary { cursor:pointer; }
form.ab select { font: inherit; padding:4px 6px; margin-right:8px; }
form.ab button { font: inherit; padding:4px 12px; background:var(--accent); color:#fff; border:0; border-radius:6px; cursor:pointer; }
svg text { font-family: inherit; font-size:11px; fill:#475467; }
svg .axis { stroke:#d0d5dd; } svg .ref { stroke:#98a2b3; stroke-dasharray:3 3; }
.legend { font-size:12px; color:var(--muted); }
.legend i { display:inline-block; width:10px; height:10px; border-radius:2px; margin:0 4px 0 10px; vertical-align:-1px; }
section.attempt { border-top:2px solid var(--line); margin-top:36px; padding-top:12px; }
.quad { display:grid; grid-template-columns:auto 1fr 1fr; gap:4px; max-width:360px; font-size:12.5px; }
.quad div { padding:6px 8px; border-radius:6px; text-align:center; }
.quad .hd { color:var(--muted); background:none; }
"""


def page(title: str, body: str, *, live: bool = False, nav: bool = True, subtitle: str = "") -> str:
    """A whole HTML document: header, navigation, ``body`` inside ``<main>``.

    With ``live`` the page re-fetches itself every few seconds and swaps in the new
    ``<main>`` (no reload, so the scroll position stays) until a fetched page is no
    longer live.
    """
    links = '<a href="/">Runs</a><a href="/matrix">Task matrix</a><a href="/compare">A/B</a>'
    navhtml = f"<nav>{links}</nav>" if nav else ""
    badge_html = '<span class="live">● live</span>' if live and nav else ""
    sub = f'<p class="sub">{subtitle}</p>' if subtitle else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{h(title)} · aka</title><link rel="icon" href="data:,"><style>{CSS}</style></head>'
        f'<body{" data-live=1" if live else ""}><header class="top">'
        f'<a class="brand" href="{"/" if nav else "#"}">aka</a>{navhtml}{badge_html}</header>'
        f"<main><h1>{h(title)}</h1>{sub}{body}</main>"
        f"<script>{LIVE_SCRIPT}</script></body></html>"
    )
