"""A compute-sanitizer command line read into tool, options and program; which options take no value comes from
the sanitizer's own --help, as captured on the H200 for 2025.3 and 2026.4."""

from __future__ import annotations

import pytest

from cuprobe.service.sanitizer.options import parse_help
from cuprobe.service.sanitizer.user_line import NO_VALUE, NotALine, read_line
from tests.conftest import CAPTURES, VERSIONS


def test_the_options_without_a_value_are_those_the_captured_help_lists_without_arg() -> None:
    listed = [parse_help(f.read_text()) for version in VERSIONS for f in (CAPTURES / version).glob("help*.txt")]
    assert len(listed) == 2 * 5 and all(len(h.options) > 60 for h in listed)  # the captures were read
    assert {flag.removeprefix("--") for h in listed for flag in h.no_value} == NO_VALUE


def test_a_line_is_read_up_to_its_program() -> None:
    line = read_line(
        ["compute-sanitizer", "-c", "3", "--check-cache-control", "--padding=64", "--tool", "memcheck",
         "--log-file", "x.txt", "./app", "--padding", "9"]
    )
    assert line.tool == "memcheck"
    assert line.options == ["launch-count=3", "check-cache-control", "padding=64"]
    assert line.program == ["./app", "--padding", "9"]  # the program's own arguments are its own
    assert line.set_aside == ["--log-file x.txt"]


def test_a_double_dash_ends_the_options() -> None:
    line = read_line(["compute-sanitizer", "--tool", "initcheck", "--", "-weird-name", "arg"])
    assert line.tool == "initcheck" and line.options == [] and line.program == ["-weird-name", "arg"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["compute-sanitizer", "--padding"], "--padding needs a value"),
        (["compute-sanitizer", "--xml"], "names no program"),
        (["compute-sanitizer", "--"], "names no program"),
        (["compute-sanitizer", "--tool", "memcheck", "--padding", "./app"], r"--padding took \./app as its value"),
        (["compute-sanitizer", "--padding", "8", "--"], r"names no program to run$"),  # 8 was its value
        (["compute-sanitizer", "--tool", "memcheck", "--tool", "racecheck", "./app"], "--tool twice"),
    ],
)
def test_a_line_that_cannot_be_read_says_why(argv: list[str], says: str) -> None:
    with pytest.raises(NotALine, match=says):
        read_line(argv)
