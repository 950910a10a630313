"""``aka dashboard``: a thin wrapper over :func:`aka.dashboard.make_server`."""

from __future__ import annotations

from typing import Annotated

import typer

from aka.cli._app import app
from aka.cli._common import DASHBOARD_PORT, DEFAULT_LEDGER, LedgerOpt, bind


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the dashboard on this machine."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: only localhost is known to be local
        return False


@app.command()
def dashboard(
    port: Annotated[
        int, typer.Option("--port", help="Port (0 picks a free one).")
    ] = DASHBOARD_PORT,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; keep the default to stay local.")
    ] = "127.0.0.1",
    verbose: Annotated[bool, typer.Option("--verbose", help="Log every request.")] = False,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            help="Also answer requests for this host name (repeatable); loopback names "
            "and the bound address are always answered.",
        ),
    ] = None,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """A local, read-only web view of the ledger: runs, leaderboard, A/B, attempts (live)."""
    from aka.cli._common import open_ledger
    from aka.dashboard import make_server

    open_ledger(ledger)  # a missing ledger is a clean error, not a traceback
    server = bind(
        lambda: make_server(
            ledger, host=host, port=port, quiet=not verbose, allow_hosts=allow_host or ()
        ),
        host=host,
        port=port,
        command="dashboard",
    )
    if not is_loopback(host):
        typer.echo(
            f"warning: {host} is not loopback; anyone who can reach it reads the ledger", err=True
        )
    typer.echo(f"aka dashboard on {server.url} (ledger {ledger}); Ctrl-C stops it")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
