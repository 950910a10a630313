"""One attempt's page: score, exact source with digests, diff, measurements, transcript."""

from __future__ import annotations

import json
from collections.abc import Sequence

from aka.dashboard import _svg as svg
from aka.dashboard._data import Row
from aka.dashboard._detail import Detail, Try
from aka.dashboard._html import (
    Column,
    badge,
    card,
    digest,
    h,
    link,
    num,
    speedup,
    speedup_ci,
    table,
    yesno,
)
from aka.dashboard._links import Links
from aka.dashboard._sections import STATE_KIND

ITEM_CAP = 4000
"""Characters of one transcript item shown before it folds."""


def seconds(x: float | None) -> str:
    """A duration with a unit that keeps three significant digits."""
    if x is None:
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x * 1e9:.3g} ns"


def diff_html(text: str | None) -> str:
    """A unified diff with added, removed and hunk lines coloured."""
    if not text:
        return '<p class="muted">the candidate is identical to the starting sources</p>'
    out = []
    for line in text.splitlines():
        cls = (
            "hunk" if line.startswith("@@")
            else "add" if line.startswith("+") and not line.startswith("+++")
            else "del" if line.startswith("-") and not line.startswith("---")
            else ""
        )  # fmt: skip
        out.append(f'<span class="{cls}">{h(line)}</span>' if cls else h(line))
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


def _summary(d: Detail, links: Links) -> str:
    r = d.row
    a = d.audit
    ev_ = a.evaluation if a else None
    flags = "".join(badge(f, "bad") for f in (r.get("hack_flags") or [])) or "none"
    pairs = [
        ("run", link(links.run(d.run_id), f'<span class="mono">{h(d.run_id)}</span>')),
        ("task", f'<span class="mono">{h(r["task"])}</span>'),
        ("arm / agent", f"{h(r['arm'])} / {h(r['agent'])}"),
        ("repeat, tries", f"{r['repeat']}, {r['tries'] or 0}"),
        ("state", badge(r["state"], STATE_KIND.get(r["state"], ""))),
        (
            "score",
            f"<b>{num(r['score'], 2)}</b>"
            + (f" ({h(a.score.policy)} v{a.score.policy_version})" if a else ""),
        ),
        ("compiled / correct", f"{yesno(r['compiled'])} / {yesno(r['correct'])}"),
        ("speedup", speedup_ci(r["speedup"], r["speedup_ci_low"], r["speedup_ci_high"])),
        ("candidate", digest(ev_.candidate if ev_ else r.get("candidate"), short=64)),
        ("task tree", digest(ev_.task if ev_ else None, short=64)),
        ("harness tree", digest(ev_.harness if ev_ else None, short=64)),
        ("device", h(ev_.device if ev_ else "–")),
        ("hack flags", flags),
        ("error", f'<span class="bad">{h(r["error"])}</span>' if r.get("error") else "none"),
    ]
    if a:
        comps = ", ".join(f"{h(k)} {v:.4g}" for k, v in sorted(a.score.components.items()))
        pairs.append(("reward components", f'<span class="mono">{comps}</span>'))
    kv = '<dl class="kv">' + "".join(f"<dt>{h(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"
    return card("Score", kv, ident="score")


def _source(d: Detail, links: Links) -> str:
    a = d.audit
    if a is None:
        return card(
            "Exact source",
            '<p class="muted">not scored yet: no evaluated source</p>',
            ident="source",
        )
    state = badge("every digest verified", "good") if a.ok else badge("DIGEST MISMATCH", "bad")
    cols = [
        Column("path"),
        Column("digest"),
        Column("bytes", "right"),
        Column("verified", "center"),
    ]
    groups = []
    for role in ("candidate", "task", "harness"):
        mine = [f for f in a.files if f.role == role]
        rows = [
            [
                f'<span class="mono">{h(f.path)}</span>',
                digest(f.digest, link=links.blob(f.digest), short=64),
                f"{f.size:,}",
                yesno(f.verified),
            ]
            for f in mine
        ]
        attrs = [f'data-role="{h(f.role)}" data-path="{h(f.path)}"' for f in mine]
        tab = table(cols, rows, cls="files", row_attrs=attrs, empty="no files")
        tree = {
            "candidate": a.evaluation.candidate,
            "task": a.evaluation.task,
            "harness": a.evaluation.harness,
        }[role]
        head = f"{role} tree {digest(tree, short=64)} · {len(mine)} files"
        groups.append(
            f"<h3>{head}</h3>{tab}" if role != "harness"
            else f'<details><summary><h3 style="display:inline">{head}</h3></summary>{tab}</details>'
        )  # fmt: skip
    files = "".join(groups)
    texts = "".join(
        f'<h3>{h(path)}</h3><pre class="source" data-path="{h(path)}">{h(text)}</pre>'
        for path, text in sorted(d.sources.items())
    )
    return card(
        "Exact source",
        f"<p>{state}</p>{files}{texts}",
        ident="source",
        note="the evaluated candidate, task and harness files; each blob re-hashed against its digest now",
    )


def _measurements(d: Detail) -> str:
    if not d.measurements:
        return card(
            "Measurements",
            '<p class="muted">no timing recorded (not correct, or not scored yet)</p>',
        )
    intervals = [
        svg.Interval(
            f"{m['shape']} {m['dtype']}",
            m["speedup"],
            m["speedup_ci_low"],
            m["speedup_ci_high"],
            f"{m['speedup']:.3f}x [{m['speedup_ci_low']:.3f}, {m['speedup_ci_high']:.3f}]",
        )
        for m in d.measurements
    ]
    plot = svg.interval_plot(intervals, label="speedup per shape", unit="×")
    rows = [
        [
            f'<span class="mono">{h(m["shape"])}</span>',
            h(m["dtype"]),
            seconds(m["baseline_s"]),
            seconds(m["candidate_s"]),
            speedup_ci(m["speedup"], m["speedup_ci_low"], m["speedup_ci_high"]),
            str(m["samples"]),
            f'<span class="muted">{h(m["method"])}</span>',
        ]
        for m in d.measurements
    ]
    tab = table(
        [Column("shape"), Column("dtype"), Column("baseline", "right"), Column("candidate", "right"),
         Column("speedup (CI)", "right"), Column("samples", "right"), Column("method")],
        rows,
    )  # fmt: skip
    cases = ""
    if d.cases:
        cases = "<h3>correctness cases</h3>" + table(
            [Column("shape"), Column("dtype"), Column("seed", "right"), Column("ok", "center"),
             Column("max |err|", "right"), Column("error")],
            [[f'<span class="mono">{h(c["shape"])}</span>' + (" (held out)" if c.get("heldout") else ""),
              h(c["dtype"]), str(c["seed"]), yesno(c["ok"]),
              "–" if c["max_abs_err"] is None else f"{c['max_abs_err']:.3g}", h(c["error"] or "")]
             for c in d.cases],
        )  # fmt: skip
    return card(
        "Measurements",
        plot + tab + cases,
        ident="measurements",
        note="median times, baseline and candidate interleaved in one process; bars are the bootstrap CI of the speedup",
    )


def _item(it: object) -> str:
    kind = str(getattr(it, "kind", "log"))
    text = str(getattr(it, "text", ""))
    data = str(getattr(it, "data", "{}"))
    extra = ""
    if data not in ("", "{}"):
        try:
            extra = json.dumps(json.loads(data), indent=1)[:ITEM_CAP]
        except ValueError:
            extra = data[:ITEM_CAP]
    body = h(text[:ITEM_CAP]) + ("…" if len(text) > ITEM_CAP else "")
    long = len(text) > 400 or "\n" in text
    shown = f"<pre>{body}</pre>" if long else f"<div>{body}</div>"
    if extra:
        shown += f'<details><summary class="muted">data</summary><pre>{h(extra)}</pre></details>'
    return f'<div class="item {h(kind)}"><div class="kind">{h(kind)}</div>{shown}</div>'


def _try(t: Try, links: Links) -> str:
    a = t.agent
    facts = [f"worker {h(t.worker or '–')}", f"attempt {h(t.status or 'in progress')}"]
    if a:
        facts += [
            f"agent {h(a.status)}",
            f"model {h(a.model or '–')}",
            f"{seconds(a.wall_s)}",
            f"tokens {a.tokens_in or 0:,} / {a.tokens_out or 0:,}",
            f"cost {num(a.cost_usd, 4)}",
        ]
        if a.transcript:
            facts.append("raw transcript " + digest(a.transcript, link=links.blob(a.transcript)))
    err = f'<p class="bad">{h(t.error)}</p>' if t.error else ""
    prompt = (
        f"<details><summary>prompt {digest(t.prompt_digest)}</summary><pre>{h(t.prompt)}</pre></details>"
        if t.prompt_digest
        else ""
    )
    items = "".join(_item(i) for i in t.items) or '<p class="muted">no output items</p>'
    return (
        f'<h3>try {t.try_no}</h3><p class="muted">{" · ".join(facts)}</p>{err}{prompt}'
        f'<div class="items">{items}</div>'
    )


def _self(rows: Sequence[Row]) -> str:
    if not rows:
        return ""
    body = [
        [str(r["try_no"]), str(r["turn"]), yesno(r["compiled"]), yesno(r["correct"]),
         speedup(r["speedup"]), num(r["score"], 1), digest(r["candidate"]), h(r["error"] or "")]
        for r in rows
    ]  # fmt: skip
    cols = ["try", "turn", "compiled", "correct", "speedup", "score", "candidate", "error"]
    return card(
        "Self-evaluations", table(cols, body), note="the agent's own checks; never the score"
    )


def attempt_sections(d: Detail, links: Links) -> str:
    """Every section of an attempt (a page body live, one block of a static report)."""
    diff = d.audit.diff if d.audit else None
    transcript = "".join(_try(t, links) for t in d.tries) or '<p class="muted">not started yet</p>'
    return (
        _summary(d, links)
        + _source(d, links)
        + card("Diff against the baseline", diff_html(diff), ident="diff")
        + _measurements(d)
        + _self(d.self_scores)
        + card(
            "Transcript",
            transcript,
            ident="transcript",
            note="the agent's structured output, in stream order",
        )
    )
