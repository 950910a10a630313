"""A task's tunables: module-level integer constants its starting source declares.

``tunables`` in task.yaml names constants of the entry file (``BLOCK_SIZE = 128``) and the
values worth trying. The ``autotune`` agent searches them; ``aka bench eval --distinct``
enumerates them to get a stream of distinct candidates that each compile fresh.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence

__all__ = ["read_constant", "set_constant", "variants"]


def read_constant(source: str, name: str) -> int | None:
    """The value of ``NAME = <int>`` at module level, if present."""
    m = re.search(rf"^{re.escape(name)}\s*=\s*(\d+)\s*$", source, flags=re.M)
    return int(m.group(1)) if m else None


def set_constant(source: str, name: str, value: int) -> str:
    """``source`` with ``NAME = <int>`` replaced by ``value``."""
    return re.sub(
        rf"^({re.escape(name)}\s*=\s*)\d+\s*$", rf"\g<1>{value}", source, count=1, flags=re.M
    )


def variants(
    source: str, tunables: Mapping[str, Sequence[int]]
) -> Iterator[tuple[dict[str, int], str]]:
    """Every combination of the tunables' values the source declares, as (values, source).

    Constants the source does not define are left out (a combination never names one it
    could not set), so each yielded source differs from every other.
    """
    names = [n for n in tunables if read_constant(source, n) is not None]
    for combo in itertools.product(*(list(dict.fromkeys(tunables[n])) for n in names)):
        chosen = dict(zip(names, combo, strict=True))
        text = source
        for name, value in chosen.items():
            text = set_constant(text, name, value)
        yield chosen, text
