"""Errors of the ledger. Each names the file (or digest) and says how to fix it."""

from __future__ import annotations


class LedgerError(Exception):
    """Base of every ledger error; ``exit_code`` is what the CLI exits with."""

    exit_code: int = 1

    def __init__(self, message: str, *, path: object | None = None, fix: str | None = None):
        self.message = message
        self.path = path
        self.fix = fix
        head = f"{path}: {message}" if path is not None else message
        super().__init__(f"{head}\n  fix: {fix}" if fix else head)


class SchemaError(LedgerError):
    """A stored event cannot be decoded by this code (unknown type, newer version)."""


class CorruptError(LedgerError):
    """A ledger file is truncated, unparsable, or does not hash to its name."""


class MissingBlobError(LedgerError):
    """A digest is referenced (or asked for) but not in the content store."""
