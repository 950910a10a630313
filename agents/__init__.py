"""aka_agents: agents behind one protocol, one module per agent."""

from aka_agents._process import AgentCheck

__all__ = ["AgentCheck"]
