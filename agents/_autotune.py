"""The ``autotune`` agent: a model-free search over a task's declared tunables.

It needs no model and no API key, which makes it the quickstart's treatment arm and a
floor every LLM agent should beat. It edits the module-level integer constants the task
declares (``tunables`` in task.yaml, e.g. ``BLOCK_SIZE``, ``NUM_WARPS``) by coordinate
descent, scoring each variant with the arena's own evaluator through self-evaluation
(so every variant it tried is recorded), and leaves the best correct variant in place.
"""

from __future__ import annotations

import time
from typing import Any

from aka.agent import AgentItem, AgentOutcome, AgentRequest, AgentSink, register_agent
from aka.selfeval import SOCKET_ENV, request_eval
from aka.tunables import read_constant, set_constant

DEFAULT_BUDGET = 12
MIN_GAIN = 1.03  # a variant must beat the best so far by 3 % to count (timing noise)


@register_agent("autotune")
class AutotuneAgent:
    """Coordinate descent over tunables, judged by the arena's evaluator."""

    name = "autotune"

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        """Search until the iteration budget or the time budget is spent."""
        entry = request.workspace / request.entry_file
        sock = request.env.get(SOCKET_ENV)
        if not request.tunables or not entry.is_file() or not sock:
            sink.emit(
                AgentItem(
                    kind="log",
                    text="autotune: nothing to tune (no tunables, entry file or eval service)",
                )
            )
            return AgentOutcome(status="ok", exit_code=0, tokens_in=0, tokens_out=0, cost_usd=0.0)
        budget = request.settings.max_iterations or DEFAULT_BUDGET
        deadline = time.monotonic() + request.settings.timeout_seconds
        best_src = entry.read_text()
        best = self._eval(sock, sink, "start", {})
        evals = 1
        for name, values in request.tunables.items():
            current = read_constant(best_src, name)
            if current is None:
                sink.emit(
                    AgentItem(
                        kind="error",
                        text=f"autotune: {name} is not a module-level int in {request.entry_file}",
                    )
                )
                continue
            for value in values:
                if value == current or evals >= budget or time.monotonic() > deadline:
                    continue
                trial = set_constant(best_src, name, value)
                entry.write_text(trial)
                sink.emit(AgentItem(kind="file_edit", text=request.entry_file, data={name: value}))
                result = self._eval(sock, sink, f"{name}={value}", {name: value})
                evals += 1
                if result.get("correct") and (result.get("speedup") or 0) > _speed(best) * MIN_GAIN:
                    best, best_src, current = result, trial, value
            entry.write_text(best_src)
        sink.emit(
            AgentItem(
                kind="message",
                text=f"autotune: kept speedup {_speed(best):.3f} after {evals} evaluations",
            )
        )
        return AgentOutcome(status="ok", exit_code=0, tokens_in=0, tokens_out=0, cost_usd=0.0)

    @staticmethod
    def _eval(sock: str, sink: AgentSink, label: str, change: dict[str, int]) -> dict[str, Any]:
        sink.emit(AgentItem(kind="tool_call", text=f"aka eval ({label})", data=change))
        result = request_eval(sock)
        sink.emit(AgentItem(kind="tool_result", text=str(result.get("speedup")), data=result))
        return result


def _speed(result: dict[str, Any]) -> float:
    return float(result.get("speedup") or 0.0) if result.get("correct") else 0.0


__all__ = ["AutotuneAgent"]
