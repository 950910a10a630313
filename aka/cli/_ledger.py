"""``aka ledger verify|compact``, ``aka sql`` and ``aka bench ledger``: thin wrappers.

Each command calls one library function; domain errors (a corrupt file, a newer
schema) surface as :class:`aka_ledger.LedgerError` and are rendered once by the CLI
boundary, so bad input never prints a traceback.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from aka.cli._app import app
from aka.cli._common import DEFAULT_LEDGER, FormatOpt, LedgerOpt, OutputFormat, emit_rows
from aka.cli._groups import bench_app, ledger_app


def _open(path: Path) -> Any:
    """Open an existing ledger with the arena's event types (never creates one)."""
    from aka.errors import NotFoundError
    from aka.events import REGISTRY
    from aka_ledger import Ledger

    if not path.is_dir():
        raise NotFoundError(
            "no ledger here",
            where=str(path),
            fix="pass --ledger DIR (or set AKA_LEDGER), or run `aka run` first",
        )
    from aka.runkeys import arena_authority

    return Ledger.open(path, registry=REGISTRY, create=False, authority=arena_authority(sign=False))


def _run_marks(led: Any) -> list[tuple[str, Any]]:
    """The high-water marks every run recorded as it started, with the run named."""
    from aka.events import RunStarted
    from aka_ledger import LedgerError, Mark

    try:
        found = led.events(types={"RunStarted"})
    except LedgerError:
        return []  # unreadable events: verify names the damage itself
    out = []
    for env in found:
        if isinstance(env.payload, RunStarted):
            where = f"run {env.run_id}'s RunStarted"
            out += [(where, Mark(w, last, head)) for w, (last, head) in env.payload.writers.items()]
    return out


@ledger_app.command("verify")
def verify(
    ledger: LedgerOpt = DEFAULT_LEDGER,
    fmt: FormatOpt = OutputFormat.table,
    deep: Annotated[
        bool,
        typer.Option("--deep", help="Also check blobs reached through others (a tree's files)."),
    ] = False,
) -> None:
    """Check segments, hash chains, sequences and blobs; exit 1 naming each bad file."""
    led = _open(ledger)
    try:
        problems = led.verify(deep=deep, marks=_run_marks(led))
    finally:
        led.close()
    rows = [{"path": p.path, "problem": p.message} for p in problems]
    if fmt is OutputFormat.table:
        for row in rows:
            typer.echo(f"{row['path']}: {row['problem']}")
        typer.echo(f"{len(rows)} problem(s)" if rows else f"{ledger}: ok", err=bool(rows))
    else:
        emit_rows(rows, fmt)
    if rows:
        raise typer.Exit(1)


@ledger_app.command("compact")
def compact(
    ledger: LedgerOpt = DEFAULT_LEDGER,
    target_rows: Annotated[
        int | None, typer.Option("--target-rows", min=1, help="Rows per compacted segment.")
    ] = None,
) -> None:
    """Merge small segments and seal dead writers' live logs; safe while runs write."""
    led = _open(ledger)
    try:
        result = led.compact(target_rows=target_rows)
    finally:
        led.close()
    typer.echo(json.dumps(dataclasses.asdict(result)))
    for path in result.quarantined:
        typer.echo(
            f"quarantined {path}: a live log with bytes that could not be decoded (its intact "
            "records were sealed; nothing was deleted); `aka ledger verify` reports it",
            err=True,
        )


@app.command("sql")
def sql(
    query: Annotated[
        str | None, typer.Argument(help="A read-only SQL query over `events` (and views).")
    ] = None,
    schema: Annotated[
        bool, typer.Option("--schema", help="List every view and its columns, then exit.")
    ] = False,
    ledger: LedgerOpt = DEFAULT_LEDGER,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Run a read-only DuckDB query over the ledger's events (and the arena's views)."""
    import duckdb

    from aka.errors import InputError

    if schema or query is None:
        _print_schema(ledger, fmt, asked=schema)
        return
    led = _open(ledger)
    try:
        con = led.connect()
    finally:
        led.close()
    try:
        from aka.views import install_views

        install_views(con)
    except ImportError:
        pass
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    _one_read_only(con, query)
    try:
        rel = con.sql(query)
        if rel is None:
            raise InputError("the query returned nothing", where="QUERY", fix="use a SELECT")
        columns = list(rel.columns)
        rows = [dict(zip(columns, r, strict=True)) for r in rel.fetchall()]
    except duckdb.Error as exc:
        raise InputError(
            str(exc).splitlines()[0], where="QUERY", fix="queries are read-only DuckDB SQL"
        ) from None
    emit_rows(rows, fmt)


_READ_ONLY = ("SELECT", "EXPLAIN")


def _one_read_only(con: Any, query: str) -> None:
    """Refuse anything but one read-only statement (no DDL, SET, PRAGMA, ATTACH, COPY, ...).

    Nothing a query does here is persisted (the connection is in memory and has no
    external access), but a second statement, a catalog change or a setting is never
    what `aka sql` is for, so it is refused before it runs.
    """
    import duckdb

    from aka.errors import InputError

    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise InputError(
            str(exc).splitlines()[0], where="QUERY", fix="queries are read-only DuckDB SQL"
        ) from None
    kinds = [str(st.type).rsplit(".", 1)[-1] for st in statements]
    if len(kinds) != 1 or kinds[0] not in _READ_ONLY:
        found = ", ".join(kinds) or "no statement"
        raise InputError(
            f"aka sql runs exactly one read-only query; got {found}",
            where="QUERY",
            fix="give one SELECT (or WITH ..., FROM ..., VALUES, DESCRIBE, EXPLAIN) statement",
        )


def _print_schema(ledger: Path, fmt: OutputFormat, *, asked: bool) -> None:
    """Every view with its columns and types (docs/views.md says what each holds)."""
    from aka.errors import InputError
    from aka.report import connect
    from aka.views import VIEW_DOCS, view_columns

    if not asked:
        raise InputError(
            "give a QUERY, or --schema to list the views and their columns",
            fix='e.g. aka sql "SELECT arm, avg(speedup) FROM scores GROUP BY arm"',
        )
    led = _open(ledger)
    try:
        columns = view_columns(connect(led))
    finally:
        led.close()
    if fmt is OutputFormat.table:
        for name, cols in columns.items():
            what = VIEW_DOCS.get(name, ("event", ""))[0]
            typer.echo(f"{name}  (one row per {what})")
            typer.echo("  " + ", ".join(f"{c} {t}" for c, t in cols))
        return
    rows: list[dict[str, object]] = [
        {"view": n, "column": c, "type": t} for n, cols in columns.items() for c, t in cols
    ]
    emit_rows(rows, fmt)


@bench_app.command("ledger")
def bench_ledger(
    events: Annotated[int, typer.Option("--events", min=1, help="Events to append.")] = 1_000_000,
    fmt: FormatOpt = OutputFormat.table,
    blob_mb: Annotated[int, typer.Option("--blob-mb", min=1, help="Size of the blob put.")] = 512,
    tmp_dir: Annotated[
        Path | None, typer.Option("--dir", help="Where to write (default: system temp).")
    ] = None,
) -> None:
    """Append, seal, compact, replay and query EVENTS events; put one large blob."""
    from aka_ledger import run_bench

    result = run_bench(events, directory=tmp_dir, blob_mb=blob_mb)
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(result, indent=2))
    else:
        emit_rows([{"metric": k, "value": v} for k, v in result.items()], fmt)
