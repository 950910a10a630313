"""Fixtures for agent tests (defined in agent_helpers)."""

from agent_helpers import fake_bin, workspace

__all__ = ["fake_bin", "workspace"]
