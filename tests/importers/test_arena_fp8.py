"""Which AMD fp8 formats an import for NVIDIA renames: those the code chooses, never those
it tests a choice against. Lines shaped like upstream's (vllm, rocmbench, geak_eval)."""

from __future__ import annotations

import pytest

from aka.importers._arena_fp8 import rename


@pytest.mark.parametrize(
    ("line", "want", "count"),
    [
        # chosen: returned, assigned, passed, listed, a branch of a conditional
        ("return torch.float8_e4m3fnuz\n", "return torch.float8_e4m3fn\n", 1),
        ("fp8_dtype = torch.float8_e5m2fnuz\n", "fp8_dtype = torch.float8_e5m2\n", 1),
        ("t = torch.zeros(1, device='cuda', dtype=torch.float8_e4m3fnuz)\n",
         "t = torch.zeros(1, device='cuda', dtype=torch.float8_e4m3fn)\n", 1),
        ("supported = [torch.float8_e4m3fnuz, torch.float8_e5m2fnuz]\n",
         "supported = [torch.float8_e4m3fn, torch.float8_e5m2]\n", 2),
        ("e4m3 = torch.float8_e4m3fn if is_cdna4() else torch.float8_e4m3fnuz\n",
         "e4m3 = torch.float8_e4m3fn if is_cdna4() else torch.float8_e4m3fn\n", 1),
        # a value of a table (its key is what is looked up)
        ("NAMES = {'e4m3fnuz': torch.float8_e4m3fnuz}\n",
         "NAMES = {'e4m3fnuz': torch.float8_e4m3fn}\n", 1),
        # tested against, looked up, or only named: kept
        ("if dtype == torch.float8_e4m3fnuz:\n    pass\n", None, 0),
        ("ok = dtype in (torch.float8_e4m3fn, torch.float8_e4m3fnuz)\n", None, 0),
        ("T = {torch.float8_e4m3fn: tl.float8e4nv, torch.float8_e4m3fnuz: tl.float8e4b8}\n",
         None, 0),
        ("has = hasattr(torch, 'float8_e4m3fnuz')  # float8_e4m3fnuz\n", None, 0),
        # not this format (a longer name), and a line with multi-byte text before it
        ("x = torch.float8_e4m3fnuz_x\n", None, 0),
        ("s = 'µ'; d = torch.float8_e4m3fnuz\n", "s = 'µ'; d = torch.float8_e4m3fn\n", 1),
        # saved on Windows, with a form feed (a page break, not a line, to the parser)
        ("\x0c\r\nx = 1\r\nd = torch.float8_e4m3fnuz\r\n",
         "\x0c\r\nx = 1\r\nd = torch.float8_e4m3fn\r\n", 1),
        ("# a\x0cb\nd = torch.float8_e4m3fnuz", "# a\x0cb\nd = torch.float8_e4m3fn", 1),
    ],
)  # fmt: skip
def test_only_chosen_formats_are_renamed(line: str, want: str | None, count: int) -> None:
    assert rename(line) == (want or line, count)


def test_a_source_that_does_not_parse_is_kept_whole() -> None:
    """Python 2 or a broken file: nothing is rewritten by guesswork."""
    source = "print 'fp8'\nd = torch.float8_e4m3fnuz\n"
    assert rename(source) == (source, 0)
