"""Fixtures for treatment tests (defined in treat_helpers)."""

from treat_helpers import recording_bin

__all__ = ["recording_bin"]
