"""What `cuprobe parse` reads: the saved XML, the text output's summary line, and the tool the run used."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import typer
from rich.markup import escape

from cuprobe.contract import Tool
from cuprobe.service.cli.local import err
from cuprobe.service.config import Settings
from cuprobe.service.models import ExitCode
from cuprobe.service.sanitizer.parse import ParseResult, parse_xml
from cuprobe.service.sanitizer.summary import (
    DEFAULT_PREFIX,
    LogTooLarge,
    SanitizerSummary,
    is_text_log,
    other_prefix,
    read_log,
    read_summary,
    unprefixed,
)


def saved_xml(xml: Path, tool: Tool | None, roots: list[str], settings: Settings) -> ParseResult:
    """The saved XML parsed, read first as its records name their tool; a --tool that contradicts them refused."""
    if is_text_log(xml):
        err.print(
            f"[red]error:[/] {escape(str(xml))} is the sanitizer's text output, not its XML: pass it with --log "
            "and give the --xml --save file as the argument"
        )
        raise typer.Exit(ExitCode.USAGE)
    if tool is Tool.NONE:
        err.print("[red]error:[/] --tool none: saved sanitizer output comes from a sanitizer tool; name it")
        raise typer.Exit(ExitCode.USAGE)
    reading = partial(parse_xml, xml, roots=roots, max_records=settings.max_records, max_bytes=settings.max_xml_bytes)
    parsed = reading(tool=None)  # first as the records name their tool
    if tool is not None and parsed.tool is not None and tool is not parsed.tool:
        err.print(
            f"[red]error:[/] --tool {tool.value}, but the file's records name {parsed.tool.value}: "
            "pass the tool that wrote them, or leave --tool out"
        )
        raise typer.Exit(ExitCode.USAGE)
    if tool is not None and parsed.tool is None and parsed.records and not parsed.error:
        parsed = reading(tool=tool)  # records that name no tool carry the one given
    return parsed


def saved_summary(log: Path | None, prefix: str | None, settings: Settings) -> SanitizerSummary | None:
    """The summary line of the sanitizer's saved text output, read with its --prefix; None without --log."""
    if prefix is not None and (not prefix or not log):
        err.print("[red]error:[/] --prefix needs --log, and a prefix that is not empty")
        raise typer.Exit(ExitCode.USAGE)
    if log is None:
        return None
    try:
        raw = read_log(log, settings.max_xml_bytes)
    except LogTooLarge as exc:
        err.print(f"[red]error:[/] --log {escape(str(exc))}, so the run cannot be called clean")
        raise typer.Exit(ExitCode.NOT_RUN) from exc
    if prefix and prefix != DEFAULT_PREFIX and not any(line.startswith(prefix.rstrip()) for line in raw.splitlines()):
        err.print(
            f"[red]error:[/] --prefix {escape(repr(prefix))}: no line of {escape(str(log))} starts with it; give the "
            "--prefix the sanitizer ran with (none for its default)"
        )
        raise typer.Exit(ExitCode.USAGE)
    text = unprefixed(raw, prefix) if prefix else raw
    summary = read_summary(text)
    if not summary.present and (seen := other_prefix(text)):
        err.print(
            f"[red]error:[/] {escape(str(log))}: its summary line starts with {escape(repr(seen))}, not "
            f"{escape(repr(prefix or DEFAULT_PREFIX))}: pass the --prefix the sanitizer ran with "
            f"(--prefix {escape(repr(seen))})"
        )
        raise typer.Exit(ExitCode.USAGE)
    return summary


def saved_tool(tool: Tool | None, parsed: ParseResult, summary: SanitizerSummary | None, log: Path | None) -> Tool:
    """The tool the saved run used: --tool, else as its records or racecheck's summary line say; refused where none
    can be named or the summary line belongs to another tool (Tool.NONE only for a file that could not be read)."""
    used = tool or parsed.tool or (Tool.RACECHECK if summary and summary.racecheck_errors is not None else None)
    if used is None and not parsed.error:
        err.print(
            "[red]error:[/] tool unknown: pass --tool (the file holds no record that names its tool"
            + ("" if log else ", and there is no --log with racecheck's summary")
            + ")"
        )
        raise typer.Exit(ExitCode.USAGE)
    if used is not None and summary is not None and summary.present:
        says = Tool.RACECHECK if summary.racecheck_errors is not None else None
        if (used is Tool.RACECHECK) != (says is Tool.RACECHECK):
            line = "a RACECHECK SUMMARY" if says else "an ERROR SUMMARY"
            whose = "only racecheck prints" if says else "racecheck never prints"
            err.print(
                f"[red]error:[/] {escape(str(log))} ends with {line} line, which {whose}, but the run is read as "
                f"{used.value}'s: pass the log and the tool of the same run"
            )
            raise typer.Exit(ExitCode.USAGE)
    return used or Tool.NONE
