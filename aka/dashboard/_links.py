"""Where a link goes: a route of the live dashboard, or an anchor in a static report.

Sections are rendered once and linked through a :class:`Links`, so the same code draws
the live pages and the single self-contained ``aka report --html`` page.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from aka.dashboard._html import path_part, query


def anchor(key: str) -> str:
    """A stable HTML id for an attempt key (readable prefix plus a short hash)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", key).strip("-")[:60]
    return f"attempt-{slug}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"


@dataclass(frozen=True)
class Links:
    """Link targets; ``static`` turns routes into in-page anchors (or no link at all)."""

    static: bool = False

    def run(self, run_id: str) -> str:
        """A run's page."""
        return "#top" if self.static else f"/run/{path_part(run_id)}"

    def attempt(self, run_id: str, key: str) -> str:
        """An attempt's page (its section in a static report)."""
        return f"#{anchor(key)}" if self.static else "/attempt" + query(run=run_id, key=key)

    def blob(self, digest: str | None) -> str | None:
        """A blob's raw bytes as text (not available in a static report)."""
        return None if self.static or not digest else f"/blob/{path_part(digest)}"

    def compare(self, a: str, b: str) -> str | None:
        """The full A/B page of two sides."""
        return None if self.static else "/compare" + query(a=a, b=b)
