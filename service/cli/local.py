"""What `cuprobe run`, `exec` and `parse` share: settings, running a request here, and printing its result."""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from cuprobe.contract import Tool
from cuprobe.service.cli.render import print_result
from cuprobe.service.config import ENV_PREFIX, Settings, get_settings
from cuprobe.service.models import ExitCode, ProbeRequest, RunResult, Severity, exit_code_for
from cuprobe.service.models.problems import describe
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.sanitizer.user_line import NotALine, read_line

console = Console()
err = Console(stderr=True)


def emit(result: RunResult, as_json: bool, fail_on: Severity = "error") -> typer.Exit:
    """Print `result` (as JSON with `as_json`); the exit that ends the command with its code."""
    if as_json:
        typer.echo(result.model_dump_json(indent=1))
    else:
        print_result(result, console)
    return typer.Exit(exit_code_for(result, fail_on))


def refused(exc: ValueError) -> typer.Exit:
    """Say why a request was refused (pydantic's errors in plain words) and exit 2."""
    if isinstance(exc, BadRequest) and exc.field == "probe":
        said = exc.message  # `unknown probe 'x'` names the field itself
    else:
        said = describe(exc) if isinstance(exc, ValidationError) else str(exc)
    err.print(f"[red]error:[/] {escape(said)}")
    return typer.Exit(ExitCode.USAGE)


def settings_or_exit() -> Settings:
    """This process's settings, or exit 2 naming each CUPROBE_* variable that holds a bad value."""
    try:
        return get_settings()
    except ValidationError as exc:
        bad = [
            f"{ENV_PREFIX}{str(e['loc'][0]).upper()}={e.get('input')!r}: {e['msg']}" if e.get("loc") else e["msg"]
            for e in exc.errors()
        ]
        err.print(f"[red]error:[/] bad setting: {escape('; '.join(bad))}")
        raise typer.Exit(ExitCode.USAGE) from exc


def _workdir(workdir: Path | None) -> None:
    """Refuse (exit 2) a --workdir that cannot be a folder: a file, or a place no folder can be made."""
    if workdir is None:
        return
    try:
        workdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        err.print(f"[red]error:[/] --workdir {escape(str(workdir))}: {escape(exc.strerror or str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from exc


def run_here(request: ProbeRequest, workdir: Path | None) -> RunResult:
    """Run `request` on this machine as the user (trusted: paths are local, commands unrestricted)."""
    settings = settings_or_exit()
    _workdir(workdir)
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="cuprobe-") as tmp:
            return run_probe(request, workdir=Path(tmp), settings=settings, trusted=True)
    return run_probe(request, workdir=workdir, settings=settings, trusted=True)


def read_sanitizer_line(
    argv: list[str], tool: Tool | None, given: list[str]
) -> tuple[list[str], Tool | None, list[str]]:
    """A compute-sanitizer command line as (program, tool, -S options), said back as the cuprobe command it is
    read as (on stderr); exit 2 where it cannot be read or its --tool is not the one given."""
    try:
        line = read_line(argv)
    except NotALine as exc:
        raise typer.BadParameter(str(exc), param_hint="command") from exc
    try:
        found = Tool(line.tool) if line.tool is not None else None
    except ValueError as exc:
        raise typer.BadParameter(f"--tool {line.tool} is not a sanitizer tool", param_hint="command") from exc
    if found is Tool.NONE:
        raise typer.BadParameter("--tool none runs no sanitizer", param_hint="command")
    if tool is not None and found is not None and tool is not found:
        raise typer.BadParameter(f"-t {tool.value}, but the command line says --tool {found.value}", param_hint="-t")
    tool = tool or found or Tool.MEMCHECK  # compute-sanitizer's own default tool
    options = [*line.options, *given]
    said = " ".join(
        ["cuprobe exec -t", tool.value, *(f"-S {shlex.quote(o)}" for o in options), "--", shlex.join(line.program)]
    )
    aside = f" (set aside, since cuprobe writes and reads its own report: {'; '.join(line.set_aside)})"
    err.print(f"read as: {said}{aside if line.set_aside else ''}", markup=False, highlight=False, soft_wrap=True)
    return line.program, tool, options
