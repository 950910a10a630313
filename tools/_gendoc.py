"""The command line of every generated doc: write it, or with ``--check`` say it is stale.

``python tools/gen_X_docs.py`` writes the file; ``--check`` writes nothing and exits 1
when the file differs from what the code renders now (the test suite runs it so the
docs never drift from the code).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def write_or_check(doc: Path, render: Callable[[], str], script: str, argv: Sequence[str]) -> int:
    """Write ``render()`` to ``doc``, or with ``--check`` in ``argv`` compare; the exit status."""
    text = render()
    if "--check" in argv:
        if not doc.is_file() or doc.read_text() != text:
            print(f"{doc} is stale: run python tools/{script}", file=sys.stderr)
            return 1
        return 0
    doc.write_text(text)
    return 0
