"""Fixtures for the warm-worker tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aka.eval import _warm


@pytest.fixture
def warm() -> Iterator[None]:
    """Warm workers on for one test; its zygotes and spares stopped afterwards."""
    _warm.use_warm_workers(True)
    yield
    _warm.use_warm_workers(None)
    _warm.shutdown()
