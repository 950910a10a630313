"""The dashboard: a local, read-only web view of the ledger, and the static HTML report.

``aka dashboard`` serves :func:`make_server` (stdlib ``http.server``; pages rendered on
the server from DuckDB queries, charts as inline SVG, no network); ``aka report RUN
--html FILE`` writes :func:`render_static_report`. See docs/dashboard.md.
"""

from aka.dashboard._ab import Outcome, compare_refs
from aka.dashboard._pages import (
    attempt_page,
    compare_page,
    index_page,
    matrix_page,
    render_static_report,
    run_page,
)
from aka.dashboard._server import DashboardServer, make_server, serve_in_thread

__all__ = [
    "DashboardServer",
    "Outcome",
    "attempt_page",
    "compare_page",
    "compare_refs",
    "index_page",
    "make_server",
    "matrix_page",
    "render_static_report",
    "run_page",
    "serve_in_thread",
]
