"""aka_ledger: an append-only event log with a BLAKE3 content store and a DuckDB read side.

A reusable library: it knows nothing of kernels, agents or GPUs. Importing it pulls in
pyarrow, pydantic and blake3 only; duckdb is imported lazily by :meth:`Ledger.connect`.
"""

from aka_ledger._authority import KEY_BYTES, Authority, Rejected
from aka_ledger._bench import run_bench
from aka_ledger._cas import ContentStore
from aka_ledger._compact import CompactionResult
from aka_ledger._envelope import Envelope
from aka_ledger._errors import CorruptError, LedgerError, MissingBlobError, SchemaError
from aka_ledger._ledger import Ledger, Problem
from aka_ledger._marks import Mark
from aka_ledger._model import EventModel, EventRegistry
from aka_ledger._tree import TreeEntry

__all__ = [
    "KEY_BYTES",
    "Authority",
    "CompactionResult",
    "ContentStore",
    "CorruptError",
    "Envelope",
    "EventModel",
    "EventRegistry",
    "Ledger",
    "LedgerError",
    "Mark",
    "MissingBlobError",
    "Problem",
    "Rejected",
    "SchemaError",
    "TreeEntry",
    "run_bench",
]
