"""The response format: a model's text becomes a candidate, or a 0-reward error naming why."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aka.integrations import MAX_RESPONSE_CHARS, ResponseError, parse_response

ONE = ["kernel.py"]
TWO = ["kernel.py", "helpers/launch.py"]
SOURCES = {
    "kernel.py": "import triton\n\nBLOCK = 64\n\n\ndef softmax(x):\n    return run(x, BLOCK)\n",
    "helpers/launch.py": "def run(x, block):\n    return x\n",
}

# Lines of Python-ish code without fences or diff markers at line start.
code_line = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_characters="\n\r`~\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    ),
    max_size=40,
).filter(lambda s: not s.lstrip().startswith(("---", "+++", "@@", "#", "//", "<think")))
code = (
    st.lists(code_line, min_size=1, max_size=12)
    .map(lambda ls: "\n".join(ls) + "\n")
    .filter(lambda s: s.strip() != "")
)


def parse(text: str, editable: list[str] = ONE) -> dict[str, str]:
    return parse_response(text, editable=editable, sources=SOURCES).files


@settings(max_examples=60, deadline=None)
@given(
    files=st.fixed_dictionaries({"kernel.py": code, "helpers/launch.py": code}),
    style=st.sampled_from(["info", "file=", "comment", "heading"]),
)
def test_fenced_blocks_round_trip(files: dict[str, str], style: str) -> None:
    parts = ["Here is my answer.\n"]
    for path, body in files.items():
        if style == "info":
            parts.append(f"```python path={path}\n{body}```\n")
        elif style == "file=":
            parts.append(f"~~~py file={path}\n{body}~~~\n")
        elif style == "comment":
            parts.append(f"```python\n# file: {path}\n{body}```\n")
        else:
            parts.append(f"### `{path}`\n\n```python\n{body}```\n")
    parts.append("That should be faster.")
    got = parse("\n".join(parts), TWO)
    assert got == {p: b.strip("\n") + "\n" for p, b in files.items()}


@settings(max_examples=60, deadline=None)
@given(
    new_lines=st.lists(code_line, min_size=1, max_size=10),
    at=st.integers(0, 6),
    fenced=st.booleans(),
)
def test_a_unified_diff_round_trips(new_lines: list[str], at: int, fenced: bool) -> None:
    before = SOURCES["kernel.py"].splitlines(keepends=True)
    after = before[:at] + [line + "\n" for line in new_lines] + before[at + 1 :]
    diff = "".join(difflib.unified_diff(before, after, "a/kernel.py", "b/kernel.py"))
    if not diff:
        return
    text = f"I changed it:\n```diff\n{diff}```\n" if fenced else diff
    assert parse(text) == {"kernel.py": "".join(after)}


def test_a_diff_with_wrong_line_numbers_and_stripped_blank_context_still_applies() -> None:
    # Models count lines badly and editors strip the space of a blank context line.
    text = "--- kernel.py\n+++ kernel.py\n@@ -40,4 +40,4 @@\n import triton\n\n-BLOCK = 64\n+BLOCK = 1024\n"
    assert parse(text)["kernel.py"] == SOURCES["kernel.py"].replace("64", "1024")


@given(body=code)
@settings(max_examples=40, deadline=None)
def test_the_bare_file_round_trips_for_one_editable_file(body: str) -> None:
    assert parse(f"```python\n{body}```") == {"kernel.py": body.strip("\n") + "\n"}
    assert parse(body) == {"kernel.py": body.strip("\n") + "\n"}


def test_messy_model_output() -> None:
    text = (
        "<think>Maybe ```python path=reference.py\nx\n``` no.</think>\n"
        "First a sketch:\n```python\nBLOCK = 1\n```\nFinal version:\n```python\nBLOCK = 2\n```\n"
    )
    got = parse_response(text, editable=ONE, sources=SOURCES)
    assert got.files == {"kernel.py": "BLOCK = 2\n"} and got.form == "bare"
    # A sample cut off at the generation limit leaves its fence open.
    assert parse("```python path=kernel.py\nBLOCK = 3\ndef f(") == {
        "kernel.py": "BLOCK = 3\ndef f(\n"
    }
    # A longer fence holds a shorter one; an opener that is never closed runs to the end.
    inner = '````python path=kernel.py\ndoc = """\n```\nexample\n```\n"""\n````'
    assert parse(inner) == {"kernel.py": 'doc = """\n```\nexample\n```\n"""\n'}
    assert parse("````x\n" * 5000)["kernel.py"].count("````x") == 4999
    # Named blocks win over bare ones, and a path given twice keeps the last block.
    text = "```python\nignored\n```\n```python path=./kernel.py\nA\n```\n```python path=kernel.py\nB\n```"
    assert parse_response(text, editable=ONE, sources=SOURCES).files == {"kernel.py": "B\n"}


@pytest.mark.parametrize(
    ("text", "editable", "says"),
    [
        ("", ONE, "empty"),
        ("  \n\t\n", ONE, "empty"),
        ("<think>all thought, no answer</think>", ONE, "empty"),
        ("x" * (MAX_RESPONSE_CHARS + 1), ONE, "over the"),
        ("```python path=reference.py\nx = 1\n```", ONE, "'reference.py' is not an editable file"),
        ("```python path=../../etc/cron.d/job\nx\n```", ONE, "leaves the workspace"),
        ("```python path=helpers/../../kernel.py\nx\n```", ONE, "leaves the workspace"),
        ("```python path=/tmp/kernel.py\nx\n```", ONE, "is absolute"),
        (
            "--- a/kernel.py\n+++ b/kernel.py\n@@ -3,1 +3,1 @@\n-BLOCK = 32\n+BLOCK = 1\n",
            ONE,
            "hunk 1 of the diff for kernel.py does not match",
        ),
        ("--- /dev/null\n+++ b/kernel.py\n@@ -0,0 +1,1 @@\n+x\n", ONE, "creates or deletes"),
        (
            "--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-a\n+b\n",
            ONE,
            "'run.sh' is not an editable file",
        ),
        ("def f(): pass", TWO, "several editable files"),
        ("```python path=kernel.py\n\n```", ONE, "block for kernel.py is empty"),
    ],
)
def test_bad_responses_are_errors_naming_what_could_not_be_parsed(
    text: str, editable: list[str], says: str
) -> None:
    with pytest.raises(ResponseError) as exc:
        parse_response(text, editable=editable, sources=SOURCES)
    assert says in str(exc.value) and "fix:" in str(exc.value)
