"""aka: an arena where AI agents optimize GPU kernels."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aka.frames import Frames
    from aka_ledger import Ledger

__version__ = "0.1.0"


def read(ledger: Ledger | str | Path) -> Frames:
    """Each view of a ledger as a polars DataFrame: ``aka.read(".aka").scores()``.

    Imported on first use, so ``import aka`` stays free of duckdb and polars (the
    evaluation worker imports it). See :mod:`aka.frames`.
    """
    from aka.frames import read as read_

    return read_(ledger)
