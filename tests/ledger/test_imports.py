"""The write side must import on a worker that lacks duckdb and polars."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_ledger_pulls_in_neither_duckdb_nor_polars() -> None:
    code = (
        "import sys, aka_ledger\n"
        "from aka_ledger import Ledger\n"
        "bad = [m for m in ('duckdb', 'polars') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
