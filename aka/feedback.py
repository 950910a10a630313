"""Feedback text: what a multi-turn policy is told about its last candidate.

The same facts a coding agent gets from ``aka eval``: whether it compiled (and the first
error lines if not), the first failing correctness case, the hack checks that fired, and
the speedup per timed shape. Built from the evaluation's own events (as it appends them, or
read back from the ledger), so the feedback a policy saw can be rebuilt from the ledger.

A scored evaluation of a correct candidate also checks the task's held-out shapes, in
processes of its own (:func:`aka.eval.with_heldout`). The policy learns whether that check
passed, the one bit the reward carries anyway, and nothing else: not how many held-out
cases there were or passed (a candidate that fails on purpose where a size exceeds a guess
would read the held-out sizes off the count, a few bits a turn), nor their shapes, inputs,
errors or flags (it could print what it was given, or choose which check fires, and be
fitted to it in the next turn). The case count on the ``correct`` line is the shown
shapes' alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from aka import events as ev

__all__ = ["FEEDBACK_EVENTS", "rejection_text", "render_feedback"]

FEEDBACK_EVENTS = ("Compiled", "CorrectnessChecked", "KernelTimed", "Scored")
"""The event types feedback is made from (all carry ``eval_id``)."""

ERROR_LINES = 12
"""Lines of a compile or runtime error passed on (the tail holds the cause)."""


def _shape(shape: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def _tail(text: str) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[-ERROR_LINES:])


def rejection_text(error: str) -> str:
    """Feedback for a response that could not be read as a candidate."""
    return f"Your response could not be read as a candidate, so nothing was run.\n{error}"


def render_feedback(payloads: Iterable[ev.EventModel]) -> str:
    """The feedback from one evaluation's events, in their order (pure)."""
    payloads = list(payloads)
    # the held-out check runs only for a candidate right on the tuning shapes: when it
    # fails, every flag and the error are its own, and none is passed on (nothing else
    # in the text comes from its processes)
    held_error = any(isinstance(p, ev.CorrectnessChecked) and p.heldout_failed for p in payloads)
    return "\n".join(_lines(payloads, held_error))


def _lines(payloads: list[ev.EventModel], held_error: bool) -> list[str]:
    lines: list[str] = []
    for p in payloads:
        if isinstance(p, ev.Compiled):
            lines.append("compiled: yes" if p.ok else "compiled: no")
            if not p.ok and p.error:
                lines.append(_tail(p.error))
        elif isinstance(p, ev.CorrectnessChecked):
            failed = [c for c in p.cases if not c.ok and not c.heldout]
            held = [c for c in p.cases if c.heldout]
            held_failed = sum(not c.ok for c in held)
            shown = len(p.cases) - len(held)
            lines.append(
                f"correct: {'yes' if p.ok else 'no'} "
                f"({shown - len(failed)}/{shown} cases of the shown shapes passed)"
            )
            if held or p.heldout_failed:
                verdict = "failed" if p.heldout_failed or held_failed else "passed"
                lines.append(
                    f"held-out shapes: {verdict} (how many, their shapes, inputs, errors and "
                    "flags are not shown)"
                )
            if failed:
                c = failed[0]
                why = c.error or (
                    f"max abs error {c.max_abs_err:.3g}"
                    if c.max_abs_err is not None
                    else "outside tolerance"
                )
                lines.append(f"first failing case: {_shape(c.shape)} {c.dtype}: {_tail(why)}")
            if p.hack_flags and not held_error:
                lines.append("reward-hack checks that fired: " + ", ".join(p.hack_flags))
        elif isinstance(p, ev.KernelTimed):
            lines.append("speedup per shape (baseline / candidate median):")
            for t in p.shapes:
                lines.append(
                    f"- {_shape(t.shape)} {t.dtype}: {t.speedup:.3f}x "
                    f"(baseline {t.baseline_s * 1e6:.1f} us, candidate {t.candidate_s * 1e6:.1f} us)"
                )
        elif isinstance(p, ev.Scored):
            if held_error:
                lines.append("error: on a held-out shape (not shown)")
            elif p.error and not any(p.error.strip() in line for line in lines):
                lines.append(f"error: {_tail(p.error)}")
            speed = f"; speedup {p.speedup:.3f}x" if p.speedup is not None else ""
            lines.append(f"score: {p.score:g} ({p.policy}){speed}")
    return lines
