"""Which options the installed compute-sanitizer has, read from its own --help, and refusing the rest."""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from cuprobe.contract import Tool
from cuprobe.service.models.options import OPTION_TOOL, SanitizerOptions

_SECTION = re.compile(r"^(\w+)(?:-specific)? options:\s*$")
# An option line: two spaces, optional short form, then the long name (`-c [ --launch-count ] arg`, `--padding arg`).
_OPTION = re.compile(r"^ {2}(?:-\w \[ )?(--[a-z0-9][a-z0-9-]*)(?: \])?( arg)?")
_INLINE_VALUES = re.compile(r"\s<([a-z0-9-]+(?:\|[a-z0-9-]+)+)>\s")
# A value listed under its option, on a line of its own indented to the descriptions' column: `all      : Report...`.
_LISTED_VALUE = re.compile(r"^ {30,}([a-z][a-z0-9-]*)\s*:\s")
# The options whose value is one of a few words (Literal fields): their values are checked against the help's list.
_CHOICES = frozenset(
    "--" + name.replace("_", "-")
    for name, info in SanitizerOptions.model_fields.items()
    if "Literal" in str(info.annotation)
)
_TOOLS = {tool.value: tool for tool in Tool if tool is not Tool.NONE}


class OptionRefused(ValueError):
    """An option the sanitizer lacks or that belongs to another tool; the message names both and the version."""


@dataclass(frozen=True)
class HelpOptions:
    """The options one sanitizer version lists: option name -> its tool (None: a general option)."""

    version: str | None
    options: dict[str, Tool | None]
    values: dict[str, frozenset[str]] = field(default_factory=dict)  # option -> the values its help lists
    no_value: frozenset[str] = frozenset()  # the options listed without `arg`: they take no value


def parse_help(text: str, version: str | None = None) -> HelpOptions:
    """Option names per section of `compute-sanitizer --help` ("General", "Memcheck-specific", ...)."""
    options: dict[str, Tool | None] = {}
    values: dict[str, set[str]] = {}
    no_value: set[str] = set()
    section: Tool | None = None
    current: str | None = None
    for line in text.splitlines():
        if match := _SECTION.match(line):
            section, current = _TOOLS.get(match.group(1).lower()), None
            continue
        if match := _OPTION.match(line):
            current = match.group(1)
            options.setdefault(current, section)
            if match.group(2) is None:
                no_value.add(current)
            if inline := _INLINE_VALUES.search(line):  # `<full|no> Print leak information...`
                values.setdefault(current, set()).update(inline.group(1).split("|"))
        elif current is not None and (listed := _LISTED_VALUE.match(line)):  # `  all      : Report all ...`
            values.setdefault(current, set()).add(listed.group(1))
    if version is None and (found := re.search(r"^Version (\S+)", text, re.M)):
        version = found.group(1)
    return HelpOptions(version, options, {flag: frozenset(v) for flag, v in values.items()}, frozenset(no_value))


@functools.lru_cache(maxsize=8)
def installed_options(sanitizer: Path) -> HelpOptions:
    """What `sanitizer --help` lists (asked once per binary); empty when it does not answer."""
    try:
        done = subprocess.run([str(sanitizer), "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return HelpOptions(None, {})
    return parse_help(done.stdout + done.stderr)


def check_options(options: SanitizerOptions, tool: Tool, known: HelpOptions | None = None) -> None:
    """Refuse options for another tool than `tool`, or that the sanitizer (`known`, when given) does not have."""
    if tool is Tool.NONE and options.flags():
        raise OptionRefused(f"sanitizer options ({', '.join(options.flags())}) need a sanitizer tool, not none")
    table = dict(OPTION_TOOL)
    version = f"compute-sanitizer {known.version}" if known and known.version else "compute-sanitizer"
    if known is not None and known.options:
        missing = [flag for flag in options.flags() if flag not in known.options]
        if missing:
            raise OptionRefused(f"{version} has no option {', '.join(missing)} (asked its --help)")
        for flag, value in options.pairs():
            allowed = known.values.get(flag) if flag in _CHOICES else None
            if value is not None and allowed and value not in allowed:
                raise OptionRefused(
                    f"{version}'s {flag} takes {', '.join(sorted(allowed))}, not {value} (asked its --help)"
                )
        table.update(known.options)
    if foreign := options.foreign(tool, table):
        raise OptionRefused(
            "; ".join(f"{flag} is a {owner} option ({version}), not one for {tool}" for flag, owner in foreign)
        )
