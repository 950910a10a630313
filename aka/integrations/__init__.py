"""Online rewards for RL trainers: a model's text in, aka's evaluation and reward out.

Public surface: the response format (:func:`parse_response`, :class:`Candidate`,
:class:`ResponseError`). The trainer adapters are modules of their own, named after the
trainer, so a trainer config can point at them: ``aka.integrations.verl:compute_score``,
``aka.integrations.trl:AkaReward``, ``aka.integrations.skyrl:AkaEnv``. None imports torch
or triton when imported (the evaluator runs candidates in processes of its own).
"""

from aka.integrations._response import MAX_RESPONSE_CHARS, Candidate, ResponseError, parse_response

__all__ = ["MAX_RESPONSE_CHARS", "Candidate", "ResponseError", "parse_response"]
