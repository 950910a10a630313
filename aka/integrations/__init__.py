"""Online rewards for RL trainers: a model's text in, aka's evaluation and reward out.

Public surface: the response format (:func:`parse_response`, :class:`Candidate`,
:class:`ResponseError`), :func:`score_response` (one response scored, locally or through
``aka serve``), :func:`timing_settings` (a trainer's or a server's timing budget,
checked) and :func:`export_prompts` with :data:`PROMPT_FORMATS` (the prompt
datasets). The trainer adapters are modules of their own, named after the trainer, so a
trainer config can point at them: ``aka.integrations.verl:compute_score``,
``aka.integrations.trl:AkaReward``, ``aka.integrations.skyrl:AkaEnv``. None imports torch
or triton when imported (the evaluator runs candidates in processes of its own), and the
dataset names load polars only when asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from aka.integrations._response import MAX_RESPONSE_CHARS, Candidate, ResponseError, parse_response
from aka.integrations._scorer import score_response, timing_settings

if TYPE_CHECKING:
    from aka.integrations._dataset import PROMPT_FORMATS, export_prompts

__all__ = [
    "MAX_RESPONSE_CHARS",
    "PROMPT_FORMATS",
    "Candidate",
    "ResponseError",
    "export_prompts",
    "parse_response",
    "score_response",
    "timing_settings",
]

_LAZY = {"PROMPT_FORMATS", "export_prompts"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'aka.integrations' has no attribute {name!r}")
    return getattr(importlib.import_module("aka.integrations._dataset"), name)
