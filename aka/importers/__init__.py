"""Bring tasks in from the formats the field already uses, and scaffold new ones.

- :func:`import_kernelbench`: KernelBench problem files become torch2triton or
  torch2cuda tasks (the reference wraps the problem's Model).
- :func:`import_agentkernelarena`: AgentKernelArena task folders become command-driven
  tasks (their own compile/correctness/performance commands judge the candidate).
- :func:`scaffold_task`: a new task folder from a template, valid as written.

Every imported task records its origin (path, and commit when the source is in git).
"""

from aka.importers._agentkernelarena import import_agentkernelarena
from aka.importers._common import ImportResult, Outcome, origin, slug
from aka.importers._kernelbench import Plan, Problem, import_kernelbench, plan, read_problem
from aka.importers._scaffold import TASK_TYPES, scaffold_task

__all__ = [
    "TASK_TYPES",
    "ImportResult",
    "Outcome",
    "Plan",
    "Problem",
    "import_agentkernelarena",
    "import_kernelbench",
    "origin",
    "plan",
    "read_problem",
    "scaffold_task",
    "slug",
]
