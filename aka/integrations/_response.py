"""The response format: how a model's text becomes a candidate (editable path -> source).

An RL policy answers in free text. This module turns that text into the files of a
candidate, tolerantly, in this order (docs/trainers.md, "The response format"):

1. **Fenced blocks with a path.** One fenced block (```` ``` ```` or ``~~~``) per editable
   file. The path is taken from the info string (```` ```python path=kernel.py ````,
   ```` ```python file=kernel.py ````, ```` ```kernel.py ````, ```` ```python kernel.py ````),
   from a first line ``# file: kernel.py`` (or ``// file:``, ``# path:``; that line is
   dropped), or from the last non-blank line before the fence when it is a heading or a
   bare mention of the path (``### kernel.py``, ``**kernel.py**``, ```` `kernel.py`: ````).
   A path given twice: the last block wins.
2. **A unified diff** against the starting sources, fenced (```` ```diff ````) or not,
   with ``--- a/kernel.py`` / ``+++ b/kernel.py`` headers; each hunk must match the
   starting text (searched near its stated line, so hand-counted line numbers pass).
3. **The bare file**, when the task has one editable file: the last fenced block without
   a path, or the whole text when it has no fence.

``<think>...</think>`` sections are dropped first. Anything else is a
:class:`ResponseError` naming what could not be parsed: an empty or oversized text, a
path that is absolute or climbs out of the workspace, a path the task does not declare
editable, a diff that does not apply. Parsing is pure: it reads the text and the starting
sources it is given and touches no file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from aka.errors import InputError

__all__ = ["MAX_RESPONSE_CHARS", "Candidate", "ResponseError", "parse_response"]

MAX_RESPONSE_CHARS = 256 * 1024
"""Longest response parsed (characters); a kernel file is a few KiB, a runaway sample is not."""

Form = Literal["fenced", "diff", "bare"]

_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^`]*)$")
_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_PATH_KEY = re.compile(r"\b(?:path|file|filename)\s*[=:]\s*[\"']?([^\s\"']+)")
_FILE_LINE = re.compile(r"^\s*(?:#|//|--)\s*(?:file|path|filename)\s*:\s*(\S+)\s*$", re.IGNORECASE)
_PATHLIKE = re.compile(r"^[\w./-]+\.\w+$")
_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*|[-*]\s+)?[*_`]*\s*(?:file\s*:\s*)?([\w./-]+\.\w+)[*_`]*\s*:?\s*$",
    re.IGNORECASE,
)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DIFF_LANGS = {"diff", "patch", "udiff"}


class ResponseError(InputError):
    """A response that is not a candidate; the message says what could not be parsed."""


@dataclass(frozen=True)
class Candidate:
    """The files a response proposes, and which rule of the format read them.

    Attributes:
        files: editable path -> full new source (only the files the response changes).
        form: ``fenced``, ``diff`` or ``bare``.
    """

    files: dict[str, str]
    form: Form


def _fail(what: str, fix: str) -> ResponseError:
    return ResponseError(what, where="response", fix=fix)


def _clean_path(raw: str, editable: Sequence[str]) -> str:
    """The editable path ``raw`` names, or a :class:`ResponseError` saying why not."""
    path = raw.strip().strip("`'\"")
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", path):
        raise _fail(f"path {raw!r} is absolute", f"name a workspace path: one of {list(editable)}")
    norm = posixpath.normpath(path.replace("\\", "/"))
    if norm == ".." or norm.startswith("../"):
        raise _fail(
            f"path {raw!r} leaves the workspace", f"name a workspace path: one of {list(editable)}"
        )
    if norm not in editable:
        raise _fail(
            f"path {raw!r} is not an editable file of this task",
            f"answer only with the editable files {list(editable)}",
        )
    return norm


def _info_path(info: str) -> str | None:
    keyed = _PATH_KEY.search(info)
    if keyed:
        return keyed.group(1)
    words = info.split()
    for word in words[:2]:
        if _PATHLIKE.match(word):
            return word
    return None


def _is_diff(text: str) -> bool:
    return bool(
        re.search(r"^--- \S", text, re.MULTILINE)
        and re.search(r"^\+\+\+ \S", text, re.MULTILINE)
        and re.search(r"^@@ ", text, re.MULTILINE)
    )


def _blocks(text: str) -> list[tuple[str, str, str]]:
    """Fenced blocks as (info string, body, last non-blank line before the fence).

    One pass over the lines (linear in the text, whatever fences it holds); a block left
    open (a sample cut off at the generation limit) runs to the end of the text.
    """
    lines = text.split("\n")
    blocks: list[tuple[str, str, str]] = []
    before = ""
    i = 0
    while i < len(lines):
        opened = _OPEN.match(lines[i])
        if not opened:
            if lines[i].strip():
                before = lines[i]
            i += 1
            continue
        fence = opened.group(1)
        close = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        body = "\n".join(lines[i + 1 : j])
        blocks.append((opened.group(2).strip(), body + "\n" if body else "", before))
        before = ""
        i = j + 1
    return blocks


def _fenced(text: str, editable: Sequence[str]) -> tuple[dict[str, str], list[str], list[str]]:
    """Blocks with a path (path -> body), bare blocks, and diff blocks, in order."""
    named: dict[str, str] = {}
    bare: list[str] = []
    diffs: list[str] = []
    for info, body, before in _blocks(text):
        lang = info.split()[0].lower() if info else ""
        if lang in _DIFF_LANGS or _is_diff(body):
            diffs.append(body)
            continue
        path = _info_path(info)
        lines = body.split("\n", 1)
        first = _FILE_LINE.match(lines[0])
        if path is None and first:
            path, body = first.group(1), lines[1] if len(lines) > 1 else ""
        if path is None:
            heading = _HEADING.match(before)
            if heading:
                path = heading.group(1)
        if path is None:
            bare.append(body)
        else:
            named[_clean_path(path, editable)] = body
    return named, bare, diffs


def _diff_path(header: str) -> str:
    path = header[4:].split("\t", 1)[0].strip()
    if re.match(r"^[ab]/", path):
        path = path[2:]
    return path


def _apply_hunks(path: str, source: str, hunks: list[tuple[int, list[str]]]) -> str:
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    out: list[str] = []
    pos = 0
    for number, (start, body) in enumerate(hunks, 1):
        old = [ln[1:] for ln in body if ln[:1] in (" ", "-")]
        new = [ln[1:] for ln in body if ln[:1] in (" ", "+")]
        want = max(start - 1, 0)
        wanted = [s.rstrip() for s in old]
        spots = sorted(range(pos, len(lines) - len(old) + 1), key=lambda at: abs(at - want))
        found = next(
            (at for at in spots if [s.rstrip() for s in lines[at : at + len(old)]] == wanted),
            None,
        )
        if found is None:
            raise _fail(
                f"hunk {number} of the diff for {path} does not match the starting source "
                f"(near line {start})",
                "diff against the starting sources shown in the prompt, or send the whole file",
            )
        out.extend(lines[pos:found])
        out.extend(s if s.endswith("\n") else s + "\n" for s in new)
        pos = found + len(old)
    out.extend(lines[pos:])
    return "".join(out)


def _parse_diff(text: str, editable: Sequence[str], sources: Mapping[str, str]) -> dict[str, str]:
    files: dict[str, list[tuple[int, list[str]]]] = {}
    lines = text.splitlines()
    current: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _diff_path(line), _diff_path(lines[i + 1])
            raw = new if new != "/dev/null" else old
            if "/dev/null" in (old, new):
                raise _fail(
                    f"the diff creates or deletes {raw!r}",
                    f"change only the existing editable files {list(editable)}",
                )
            current = _clean_path(raw, editable)
            files.setdefault(current, [])
            i += 2
            continue
        hunk = _HUNK.match(line)
        if hunk:
            if current is None:
                raise _fail(
                    "a diff hunk comes before any '--- a/PATH' / '+++ b/PATH' header",
                    "start each file's diff with its two header lines",
                )
            body: list[str] = []
            i += 1
            while (
                i < len(lines)
                and not _HUNK.match(lines[i])
                and not (
                    lines[i].startswith("--- ")
                    and i + 1 < len(lines)
                    and lines[i + 1].startswith("+++ ")
                )
            ):
                if lines[i][:1] in (" ", "+", "-"):
                    body.append(lines[i] + "\n")
                elif lines[i] == "":
                    body.append(" \n")  # editors and models strip the blank context line's space
                elif not lines[i].startswith("\\"):
                    break
                i += 1
            files[current].append((int(hunk.group(1)), body))
            continue
        i += 1
    if not files or not any(files.values()):
        raise _fail(
            "the diff has no hunk ('@@ -a,b +c,d @@')", "send a unified diff or the whole file"
        )
    return {path: _apply_hunks(path, sources[path], hunks) for path, hunks in files.items()}


def _strip(body: str) -> str:
    text = body.strip("\n")
    return text + "\n" if text else ""


def parse_response(
    text: str,
    *,
    editable: Sequence[str],
    sources: Mapping[str, str],
    max_chars: int = MAX_RESPONSE_CHARS,
) -> Candidate:
    """Read a model's response as a candidate (rules in the module docstring).

    Args:
        text: the model's message (the completion, without the prompt).
        editable: the task's editable paths.
        sources: the starting source of each editable path (diffs apply to these).
        max_chars: longest text accepted.

    Raises:
        ResponseError: empty, too long or not Unicode text, no file found, a bad or
            non-editable path, a diff that does not apply, or an empty file.
    """
    if len(text) > max_chars:
        raise _fail(
            f"the response is {len(text)} characters, over the {max_chars} limit",
            "answer with the editable files only",
        )
    try:  # a lone surrogate ("\\ud800" in JSON) is text no file can hold
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _fail(
            f"the response is not Unicode text: character {exc.start} is a lone surrogate",
            "send the model's text as decoded UTF-8",
        ) from None
    body = _THINK.sub("", text)
    if not body.strip():
        raise _fail("the response is empty", f"answer with the new {list(editable)}")
    named, bare, diffs = _fenced(body, editable)
    if named:
        files, form = {p: _strip(s) for p, s in named.items()}, "fenced"
    elif diffs or (not bare and _is_diff(body)):
        files, form = _parse_diff("\n".join(diffs) if diffs else body, editable, sources), "diff"
    elif len(editable) != 1:
        raise _fail(
            "no fenced block names its file, and the task has several editable files",
            "put each file in its own block: ```python path=FILE",
        )
    else:
        files, form = {editable[0]: _strip(bare[-1] if bare else body)}, "bare"
    empty = sorted(p for p, s in files.items() if not s.strip())
    if empty:
        raise _fail(f"the block for {empty[0]} is empty", "send the whole file")
    return Candidate(files=files, form=form)  # type: ignore[arg-type]
