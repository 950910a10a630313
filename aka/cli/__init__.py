"""The ``aka`` command line: thin wrappers over library functions.

Every command maps domain errors (:class:`aka.errors.AkaError` and the ledger's
:class:`aka_ledger.LedgerError`) to a message and an exit code here, once.
"""

from aka.cli._app import app, main

__all__ = ["app", "main"]
