"""A compute-sanitizer command line as a user already runs it (`compute-sanitizer --tool memcheck --leak-check full
./app args`), read into what cuprobe runs instead: the tool, the options as NAME=VALUE pairs (checked later like any
`-S`), and the program. Options that only say where and how the sanitizer writes its report are set aside, since
cuprobe writes and reads its own; every other option goes through the same checks as `-S`, so one cuprobe does not
pass is refused with its reason."""

from __future__ import annotations

from dataclasses import dataclass, field

from cuprobe.service.models.options import SHORT_NAMES, SWITCHES

# Options that take no value, as `compute-sanitizer --help` lists them (2025.3 and 2026.4; tests/data/captures):
# the switches cuprobe passes, and those of the options it does not pass.
NO_VALUE = frozenset(flag.removeprefix("--") for flag in SWITCHES) | frozenset({
    "dump-kernel-launches", "generate-coredump", "help", "kill", "print-session-details", "quiet",
    "save-session-details", "support-32bit", "version", "xml",
})  # fmt: skip
# Where and how the report is written: cuprobe asks for its own XML and reads it, so these change nothing checked.
REPORT_ONLY = frozenset({
    "xml", "save", "log-file", "print-limit", "error-exitcode", "prefix", "quiet", "demangle", "strip-paths",
    "print-session-details", "save-session-details", "show-backtrace", "num-callers-host", "num-callers-device",
    "backtrace-short",
})  # fmt: skip


class NotALine(ValueError):
    """The command line cannot be read (an option without its value, no program)."""


@dataclass
class SanitizerLine:
    tool: str | None
    options: list[str]  # NAME=VALUE (or NAME for a switch), as -S takes them
    program: list[str]
    set_aside: list[str] = field(default_factory=list)  # the report-only options, as written


def read_line(argv: list[str]) -> SanitizerLine:
    """`argv` (a compute-sanitizer command line) as tool, options and program; NotALine naming what is wrong."""
    tool: str | None = None
    options: list[str] = []
    aside: list[str] = []
    written: list[str] = []  # the last option as written, with its value
    i = 1
    while i < len(argv):
        token = argv[i]
        if token == "--":
            i += 1
            break
        if not token.startswith("-") or token == "-":
            break
        name, eq, value = token.lstrip("-").partition("=")
        name = SHORT_NAMES.get(name, name)
        written = [token]
        if not eq and name not in NO_VALUE:
            if i + 1 >= len(argv):
                raise NotALine(f"{token} needs a value, and the command line ends there")
            value = argv[i + 1]
            written.append(value)
            i += 1
        i += 1
        if name == "tool":
            if tool is not None and tool != value:
                raise NotALine(f"the line gives --tool twice ({tool}, then {value}): keep one")
            tool = value
        elif name in REPORT_ONLY:
            aside.append(" ".join(written))
        else:
            options.append(f"{name}={value}" if eq or name not in NO_VALUE else name)
    program = argv[i:]
    if not program:
        took = ""
        if len(written) == 2 and argv[-1] == written[1]:  # the last option took what was meant as the program
            took = f" ({written[0]} took {written[1]} as its value: give it one before the program)"
        raise NotALine(f"the compute-sanitizer command line names no program to run{took}")
    return SanitizerLine(tool, options, program, aside)
