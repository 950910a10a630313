"""What each turn of an attempt did: the model's message, the candidate's diff, the feedback.

Multi-turn RL rows (``aka export rewards``) need, per turn, the action (what the model
said and the candidate it left) and what it was told back. The ledger has all three, in
different events: the agent's stream (``AgentOutput`` items), the evaluated candidate
tree (``EvaluationStarted.candidate``) next to the task tree, and the evaluation's events.

Messages are split at the agent's calls of ``aka eval`` (a ``tool_call`` item that names
it): turn *k* is the *k*-th self-evaluation, so the messages before the *k*-th call belong
to turn *k*, and those after the last call to the final candidate (turn 0). An attempt
without such calls (a trainer's sample, an agent that never evaluates itself) has all its
messages on turn 0.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

from aka import events as ev
from aka.feedback import FEEDBACK_EVENTS, render_feedback
from aka_ledger import ContentStore, Ledger

__all__ = ["EVAL_CALL", "TurnTexts", "candidate_diff", "split_messages"]

EVAL_CALL = "aka eval"
"""A ``tool_call`` item whose text or data contains this starts a new turn."""


def split_messages(items: Iterable[ev.AgentItemRecord]) -> dict[int, str]:
    """An attempt's messages by turn (rules in the module docstring); pure."""
    turns: dict[int, list[str]] = defaultdict(list)
    turn = 1
    for item in items:
        if item.kind == "message" and item.text.strip():
            turns[turn].append(item.text)
        elif item.kind == "tool_call" and EVAL_CALL in f"{item.text} {item.data}":
            turn += 1
    out = {k: "\n\n".join(v) for k, v in turns.items() if k != turn}
    if turn in turns:
        out[0] = "\n\n".join(turns[turn])
    return out


def _start_files(cas: ContentStore, task_tree: str) -> dict[str, str]:
    """Editable path -> digest of its starting source, from a task tree."""
    entries = {e.path: e.digest for e in cas.read_tree(task_tree)}
    spec = yaml.safe_load(cas.get(entries["task.yaml"])) or {}
    prefix = str(spec.get("source_dir", "source")).rstrip("/") + "/"
    editable = [str(e).rstrip("/") for e in spec.get("editable", [])]
    start = {p[len(prefix) :]: d for p, d in entries.items() if p.startswith(prefix)}
    return {
        rel: d
        for rel, d in start.items()
        if any(rel == e or rel.startswith(e + "/") for e in editable)
    }


def _lines(cas: ContentStore, digest: str | None) -> list[str]:
    if digest is None:
        return []
    return cas.get(digest).decode(errors="replace").splitlines(keepends=True)


def candidate_diff(cas: ContentStore, start: dict[str, str], candidate: str) -> str:
    """The unified diff from the starting sources to a candidate tree (as ``capture`` writes)."""
    after = {e.path: e.digest for e in cas.read_tree(candidate)}
    chunks: list[str] = []
    for rel in sorted(set(start) | set(after)):
        if start.get(rel) != after.get(rel):
            before_text, after_text = _lines(cas, start.get(rel)), _lines(cas, after.get(rel))
            chunks.extend(difflib.unified_diff(before_text, after_text, f"a/{rel}", f"b/{rel}"))
    return "".join(chunks)


class TurnTexts:
    """Messages, diffs and feedback of some runs, read from the ledger once.

    Args:
        ledger: the ledger.
        run_ids: the runs whose turns are looked up.
    """

    def __init__(self, ledger: Ledger, run_ids: Sequence[str]):
        self.cas = ledger.cas
        self._messages: dict[tuple[str, str, int], dict[int, str]] = {}
        self._evals: dict[str, list[ev.EventModel]] = defaultdict(list)
        self._starts: dict[str, dict[str, str]] = {}
        items: dict[tuple[str, str, int], list[ev.AgentItemRecord]] = defaultdict(list)
        for run_id in run_ids:
            for env in ledger.events(run_id=run_id, types=["AgentOutput", *FEEDBACK_EVENTS]):
                p = env.payload
                if isinstance(p, ev.AgentOutput) and env.attempt_key:
                    items[(run_id, env.attempt_key, p.try_no)].extend(p.items)
                elif hasattr(p, "eval_id"):
                    self._evals[p.eval_id].append(p)
        self._messages = {k: split_messages(v) for k, v in items.items()}

    def message(self, run_id: str, attempt_key: str, try_no: int, turn: int) -> str:
        """What the model said in that turn ('' when it said nothing, or is not a model)."""
        return self._messages.get((run_id, attempt_key, try_no), {}).get(turn, "")

    def feedback(self, eval_id: str | None) -> str:
        """The feedback of an evaluation ('' for none)."""
        return render_feedback(self._evals.get(eval_id, [])) if eval_id else ""

    def diff(self, task_tree: str | None, candidate: str | None) -> str:
        """The candidate's diff from the task's starting sources ('' if a blob is missing)."""
        if not task_tree or not candidate:
            return ""
        try:
            if task_tree not in self._starts:
                self._starts[task_tree] = _start_files(self.cas, task_tree)
            return candidate_diff(self.cas, self._starts[task_tree], candidate)
        except Exception:  # a missing blob is reported by `aka ledger verify`, not here
            return ""

    def columns(self, rows: Iterable[dict[str, Any]]) -> tuple[list[str], list[str]]:
        """``message`` and ``feedback`` for rows with run_id, attempt_key, try_no, turn, eval_id."""
        msgs: list[str] = []
        feedback: list[str] = []
        for r in rows:
            msgs.append(self.message(r["run_id"], r["attempt_key"], r["try_no"], r["turn"]))
            feedback.append(self.feedback(r.get("eval_id")))
        return msgs, feedback
