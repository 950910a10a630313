"""aka_ledger: an append-only event log with a BLAKE3 content store and a DuckDB read side.

A reusable library: it knows nothing of kernels, agents or GPUs.
"""

from aka_ledger._errors import CorruptError, LedgerError, MissingBlobError, SchemaError
from aka_ledger._model import EventModel, EventRegistry

__all__ = [
    "CorruptError",
    "EventModel",
    "EventRegistry",
    "LedgerError",
    "MissingBlobError",
    "SchemaError",
]
