"""The read side in one call: each view of the ledger as a polars DataFrame.

``aka.read(ledger)`` is the analysis entry point (like Inspect's ``evals_df`` and
``samples_df``): one method per grain, named after the view it returns (docs/views.md
lists every column), and :meth:`Frames.sql` for anything else::

    import aka
    frames = aka.read(".aka")
    frames.scores().group_by("arm").agg(pl.col("speedup").mean())
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from aka.errors import InputError, NotFoundError
from aka.events import REGISTRY
from aka.report import connect
from aka.views import VIEWS
from aka_ledger import Ledger


class Frames:
    """DataFrames over one snapshot of a ledger (read again for newer events)."""

    def __init__(self, ledger: Ledger):
        self._con = connect(ledger)

    def sql(self, query: str, params: list[Any] | None = None) -> pl.DataFrame:
        """Any read-only query over ``events`` and the views, as a DataFrame."""
        frame = pl.from_arrow(self._con.sql(query, params=params).to_arrow_table())
        assert isinstance(frame, pl.DataFrame)
        return frame

    def view(self, name: str) -> pl.DataFrame:
        """The view ``name`` whole (see :data:`aka.views.VIEWS`)."""
        if name != "events" and name not in VIEWS:
            raise InputError(
                f"no view {name!r}", fix=f"use one of events, {', '.join(VIEWS)} (docs/views.md)"
            )
        return self.sql(f"SELECT * FROM {name}")

    def events(self) -> pl.DataFrame:
        """Every event once, payload as JSON text."""
        return self.view("events")

    def runs(self) -> pl.DataFrame:
        """One row per run."""
        return self.view("runs")

    def attempts(self) -> pl.DataFrame:
        """One row per planned attempt (task, arm, agent, repeat, order)."""
        return self.view("attempts")

    def evaluations(self) -> pl.DataFrame:
        """One row per evaluation (final, self, held-out, validation)."""
        return self.view("evaluations")

    def measurements(self) -> pl.DataFrame:
        """One row per timed shape of an evaluation."""
        return self.view("measurements")

    def all_scores(self) -> pl.DataFrame:
        """One row per ``Scored`` event, the agent's self-evaluations included."""
        return self.view("all_scores")

    def scores(self) -> pl.DataFrame:
        """One row per attempt's final score: the attempt table ``aka compare`` reads."""
        return self.view("scores")

    def arms(self) -> pl.DataFrame:
        """One row per run and arm, with the resolved arm's digest."""
        return self.view("arms")

    def heldout(self) -> pl.DataFrame:
        """One row per held-out re-evaluation."""
        return self.view("heldout")

    def workers(self) -> pl.DataFrame:
        """One row per run and worker process that started attempts."""
        return self.view("workers")


def read(ledger: Ledger | str | Path) -> Frames:
    """DataFrames of a ledger: a directory (opened read-only, never created) or a Ledger.

    Raises:
        NotFoundError: no ledger at that path.
    """
    if isinstance(ledger, Ledger):
        return Frames(ledger)
    path = Path(ledger)
    if not path.is_dir():
        raise NotFoundError("no ledger here", where=str(path), fix="pass the ledger directory")
    with Ledger.open(path, registry=REGISTRY, create=False) as opened:
        return Frames(opened)
