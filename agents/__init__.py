"""aka_agents: agents behind one protocol, one module per agent."""
