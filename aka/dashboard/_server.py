"""The local web server: stdlib ``http.server``, read-only, one fresh query per request.

It answers GET and HEAD only (anything else is 405), binds to 127.0.0.1 unless told
otherwise, and sends a Content-Security-Policy that lets a page load nothing from
anywhere but itself. Every request re-opens the ledger's read side, so pages follow a
run while it is in progress.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Collection
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from aka.dashboard import _pages as pages
from aka.dashboard._html import card, h, page
from aka.errors import AkaError, NotFoundError
from aka_ledger import Ledger

DIGEST_RE = re.compile(r"^b3:[0-9a-f]{64}$")
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'"
)


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
"""Host header names answered by default: a page another site loads through DNS
rebinding arrives with that site's name and is refused."""


def host_name(header: str | None) -> str | None:
    """The name in a Host header, without its port, lowercased (None if absent)."""
    if not header:
        return None
    header = header.strip().lower()
    if header.startswith("["):  # [v6]:port
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class DashboardServer(ThreadingHTTPServer):
    """A threading HTTP server that knows which ledger it shows."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        open_ledger: Callable[[], Ledger],
        *,
        quiet: bool,
        allow_hosts: Collection[str] = (),
    ) -> None:
        super().__init__(address, _Handler)
        self.open_ledger = open_ledger
        self.quiet = quiet
        bound = str(address[0]).lower()
        extra = {bound} if bound not in ("", "0.0.0.0", "::") else set()
        self.allowed_hosts = LOOPBACK_NAMES | extra | {h.lower() for h in allow_hosts}

    @property
    def url(self) -> str:
        """Where a browser reaches it."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/"


class _Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = "aka-dashboard"

    def log_message(self, format: str, *args: object) -> None:
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    def _send(self, status: int, body: bytes, ctype: str, *, head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _route(self) -> tuple[int, bytes, str]:
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        ledger = self.server.open_ledger()
        html = "text/html; charset=utf-8"
        if path == "/":
            return 200, pages.index_page(ledger).encode(), html
        if path == "/matrix":
            return 200, pages.matrix_page(ledger).encode(), html
        if path == "/compare":
            return 200, pages.compare_page(ledger, q.get("a"), q.get("b")).encode(), html
        if path.startswith("/run/"):
            return 200, pages.run_page(ledger, path[len("/run/") :]).encode(), html
        if path == "/attempt" and "run" in q and "key" in q:
            return 200, pages.attempt_page(ledger, q["run"], q["key"]).encode(), html
        if path.startswith("/blob/"):
            digest = path[len("/blob/") :]
            if not DIGEST_RE.match(digest):
                raise NotFoundError(
                    f"not a digest: {digest!r}", fix="digests look like b3:<64 hex>"
                )
            try:
                blob = ledger.cas.get(digest)
            except Exception as exc:  # the store says why (missing, unreadable)
                raise NotFoundError(f"no blob {digest}: {exc}") from exc
            return 200, blob, "text/plain; charset=utf-8"
        raise NotFoundError(f"no page at {path!r}", fix="start from the runs page at /")

    def _host_allowed(self, *, head: bool) -> bool:
        name = host_name(self.headers.get("Host"))
        if name in self.server.allowed_hosts:
            return True
        message = (
            f"this dashboard does not answer to the host name {name!r}; start it with "
            f"`aka dashboard --allow-host {name}` if that name is yours"
        )
        body = _error_page("Unknown host", message)
        self._send(HTTPStatus.FORBIDDEN, body, "text/html; charset=utf-8", head=head)
        return False

    def _handle(self, *, head: bool) -> None:
        if not self._host_allowed(head=head):
            return
        try:
            status, body, ctype = self._route()
        except NotFoundError as exc:
            status, body, ctype = (
                404,
                _error_page("Not found", str(exc)),
                "text/html; charset=utf-8",
            )
        except AkaError as exc:
            status, body, ctype = (
                400,
                _error_page("Cannot show this", str(exc)),
                "text/html; charset=utf-8",
            )
        except Exception as exc:  # the page boundary: show the error, keep serving
            msg = f"{type(exc).__name__}: {exc}"
            status, body, ctype = 500, _error_page("Error", msg), "text/html; charset=utf-8"
        self._send(status, body, ctype, head=head)

    def do_GET(self) -> None:
        self._handle(head=False)

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def _refuse(self) -> None:
        if not self._host_allowed(head=False):
            return
        body = _error_page("Read-only", "the dashboard never changes the ledger")
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, body, "text/html; charset=utf-8")

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse


def _error_page(title: str, message: str) -> bytes:
    return page(
        title,
        card(title, f'<p class="bad">{h(message)}</p><p><a href="/">back to the runs</a></p>'),
    ).encode()


def make_server(
    ledger_root: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    quiet: bool = True,
    allow_hosts: Collection[str] = (),
) -> DashboardServer:
    """A server over the ledger at ``ledger_root`` (not started; ``port=0`` picks a free one).

    It answers only requests whose Host header names a loopback name, the bound address
    or one of ``allow_hosts`` (so a web page cannot read it through DNS rebinding).

    Raises:
        LedgerError: there is no ledger at ``ledger_root``.
    """
    from aka.events import REGISTRY
    from aka.runkeys import arena_authority

    Ledger.open(ledger_root, registry=REGISTRY, create=False)  # fail now, not on first request

    def open_ledger() -> Ledger:
        authority = arena_authority(sign=False)
        return Ledger.open(ledger_root, registry=REGISTRY, create=False, authority=authority)

    return DashboardServer((host, port), open_ledger, quiet=quiet, allow_hosts=allow_hosts)


def serve_in_thread(server: DashboardServer) -> threading.Thread:
    """Serve from a daemon thread (tests, notebooks); stop with ``server.shutdown()``."""
    thread = threading.Thread(target=server.serve_forever, name="aka-dashboard", daemon=True)
    thread.start()
    return thread
