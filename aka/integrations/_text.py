"""Small helpers the trainer adapters share: texts out of chat messages, task lookup."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aka.errors import InputError

__all__ = ["chat_text", "message_text", "row_task"]


def message_text(completion: Any) -> str:
    """The model's text from a completion: a string, or a list of chat messages.

    For a conversational completion the assistant messages are joined (usually there is
    one). Anything else is an :class:`InputError` naming the type.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return str(completion.get("content") or "")
    if isinstance(completion, list | tuple):
        said = [m for m in completion if isinstance(m, Mapping)]
        mine = [m for m in said if m.get("role", "assistant") == "assistant"] or said
        return "\n\n".join(str(m.get("content") or "") for m in mine)
    raise InputError(
        f"a completion is a {type(completion).__name__}",
        where="completions",
        fix="pass strings or lists of {role, content} messages",
    )


def chat_text(prompt: Any) -> str:
    """A prompt as one text (a chat prompt's messages, one per paragraph)."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list | tuple):
        return "\n\n".join(
            str(m.get("content") or "") if isinstance(m, Mapping) else str(m) for m in prompt
        )
    return "" if prompt is None else str(prompt)


def row_task(
    default: str | None, extra_info: Any, ground_truth: Any, *, where: str
) -> tuple[str, str | None]:
    """The task key and the expected task digest of one dataset row.

    Looks in ``extra_info`` (a mapping with ``task`` and ``task_digest``), then in
    ``ground_truth`` (the JSON string or mapping ``aka export prompts`` writes), then
    falls back to ``default``.

    Raises:
        InputError: no task anywhere.
    """
    for holder in (extra_info, ground_truth):
        if isinstance(holder, str):
            try:
                holder = json.loads(holder)
            except json.JSONDecodeError:
                continue
        if isinstance(holder, Mapping) and isinstance(holder.get("task"), str):
            digest = holder.get("task_digest")
            return holder["task"], digest if isinstance(digest, str) else None
    if default:
        return default, None
    raise InputError(
        "no task for this row",
        where=where,
        fix="export the dataset with `aka export prompts` (extra_info.task), or pass task=",
    )
