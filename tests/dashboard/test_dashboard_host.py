"""The dashboard answers only for names it knows: DNS rebinding cannot read the ledger."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path

import pytest

from aka.dashboard import DashboardServer, make_server, serve_in_thread
from aka.events import REGISTRY
from aka_ledger import Ledger


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[DashboardServer]:
    Ledger.open(tmp_path / "ledger", registry=REGISTRY).close()
    allow = getattr(request, "param", ())
    srv = make_server(tmp_path / "ledger", port=0, allow_hosts=allow)
    serve_in_thread(srv)
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def _get(srv: DashboardServer, host: str | None, method: str = "GET") -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=30)
    conn.putrequest(method, "/", skip_host=True)
    if host is not None:
        conn.putheader("Host", host)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, body


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "LOCALHOST"])
def test_loopback_names_are_answered(server: DashboardServer, host: str) -> None:
    status, _ = _get(server, host.format(port=server.server_address[1]))
    assert status == 200


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1.evil.example"])
def test_another_host_name_is_refused(server: DashboardServer, host: str) -> None:
    status, body = _get(server, host.format(port=server.server_address[1]))
    assert status == 403 and "does not answer to the host name" in body and "--allow-host" in body


def test_a_request_without_a_host_is_refused(server: DashboardServer) -> None:
    assert _get(server, None)[0] == 403
    assert _get(server, "evil.example", method="POST")[0] == 403


@pytest.mark.parametrize("server", [("arena.lan",)], indirect=True)
def test_allow_host_widens_the_names(server: DashboardServer) -> None:
    assert _get(server, f"arena.lan:{server.server_address[1]}")[0] == 200
    assert _get(server, "other.lan")[0] == 403
