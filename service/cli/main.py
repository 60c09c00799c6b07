"""`cuprobe`: a thin typer shell over the library, ending with a meaningful exit code."""

from __future__ import annotations

import importlib.util
import shlex
import tempfile
from functools import partial
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cuprobe import __version__
from cuprobe.contract import Tool
from cuprobe.probes import registry
from cuprobe.probes.command import is_sanitizer
from cuprobe.service.cli import gate as cli_gate
from cuprobe.service.cli import jobs as cli_jobs
from cuprobe.service.cli.check import check_local, check_service, check_verdict
from cuprobe.service.cli.options import FailOnOpt, SanitizerOpt, fail_on, parse_options
from cuprobe.service.cli.render import parameter_rows, print_result
from cuprobe.service.config import ENV_PREFIX, Settings, get_settings
from cuprobe.service.models import ExitCode, Outcome, ProbeRequest, RunResult, Severity, exit_code_for
from cuprobe.service.models.problems import describe
from cuprobe.service.models.reasons import ALSO, by_reason, names_line
from cuprobe.service.probing.admission import BadRequest, needs_gpu_by_default
from cuprobe.service.probing.environment import gpu_facts
from cuprobe.service.probing.gpus import visible_gpus
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.removed_settings import RemovedSetting, refuse_removed
from cuprobe.service.sanitizer.classify import classify_saved
from cuprobe.service.sanitizer.launches import discount
from cuprobe.service.sanitizer.locate import SanitizerMissing, candidates, find_sanitizer, sanitizer_version
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
from cuprobe.service.sanitizer.user_line import NotALine, read_line
from cuprobe.service.worker.gpu_slots import located_version, slots_for, steadier_sanitizer
from cuprobe.service.worker.warm import warm_line

app = typer.Typer(
    help="cuprobe: run GPU kernel probes under compute-sanitizer and report honest outcomes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)


def _version(shown: bool) -> None:
    if shown:
        typer.echo(f"cuprobe {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print cuprobe's version and exit")
    ] = False,
) -> None:
    """cuprobe: run GPU kernel probes under compute-sanitizer and report honest outcomes."""


ToolOption = Annotated[Tool | None, typer.Option("--tool", "-t", help="sanitizer tool, or none for a bare run")]
JsonFlag = Annotated[bool, typer.Option("--json", help="print the RunResult as JSON")]


def _emit(result: RunResult, as_json: bool, fail_on: Severity = "error") -> None:
    if as_json:
        typer.echo(result.model_dump_json(indent=1))
    else:
        print_result(result, console)
    raise typer.Exit(exit_code_for(result, fail_on))


def _refused(exc: ValueError) -> typer.Exit:
    """Say why a request was refused (pydantic's errors in plain words) and exit 2."""
    said = describe(exc) if isinstance(exc, ValidationError) else str(exc)
    err.print(f"[red]error:[/] {escape(said)}")
    return typer.Exit(ExitCode.USAGE)


def _settings() -> Settings:
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


def _run_here(request: ProbeRequest, workdir: Path | None) -> RunResult:
    """Run `request` on this machine as the user (trusted: paths are local, commands unrestricted)."""
    settings = _settings()
    _workdir(workdir)
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="cuprobe-") as tmp:
            return run_probe(request, workdir=Path(tmp), settings=settings, trusted=True)
    return run_probe(request, workdir=workdir, settings=settings, trusted=True)


@app.command()
def run(
    probe: Annotated[str, typer.Argument(help="probe name (see `cuprobe probes`)")],
    tool: ToolOption = None,
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="probe parameter key=value")] = None,
    timeout: Annotated[float | None, typer.Option(help="wall-clock limit in seconds")] = None,
    kernel: Annotated[
        list[str] | None,
        typer.Option(
            help="check only kernels whose name contains this (a sanitizer tool only; refused with tool none)"
        ),
    ] = None,
    sanitizer_option: SanitizerOpt = None,
    fail_on_level: FailOnOpt = "error",
    workdir: Annotated[Path | None, typer.Option(help="keep run.xml, logs and result.json here")] = None,
    confirm: Annotated[
        bool | None,
        typer.Option(
            "--confirm/--no-confirm",
            help="re-run initcheck findings' cases bare with poisoned memory: consequential, benign, blind-spot",
        ),
    ] = None,
    backtrace: Annotated[
        str | None,
        typer.Option(
            "--show-backtrace", help="compute-sanitizer --show-backtrace: yes|host|device|no (not with tool none)"
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run PROBE once on this machine and report its findings (exit 0 clean, 1 findings, 2 bad usage, 3 could not
    run)."""
    level = fail_on(fail_on_level)
    try:
        request = ProbeRequest(
            probe=probe,
            tool=tool,
            params=cli_jobs.parse_params(param or [], None),
            timeout_s=timeout,
            kernel_filter=kernel or [],
            confirm=confirm,
            show_backtrace=backtrace,
            options=parse_options(sanitizer_option or []),
        )
        result = _run_here(request, workdir)
    except (BadRequest, ValueError) as exc:
        raise _refused(exc) from exc
    _emit(result, as_json, level)


@app.command("exec")
def exec_command(
    command: Annotated[list[str], typer.Argument(help="the command and its arguments, after --")],
    tool: ToolOption = None,
    sanitizer_option: SanitizerOpt = None,
    fail_on_level: FailOnOpt = "error",
    timeout: Annotated[float, typer.Option(help="wall-clock limit of the command, seconds")] = 600,
    cwd: Annotated[Path | None, typer.Option(help="working directory of the command")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="KEY=VALUE for the command, repeatable")] = None,
    case: Annotated[str | None, typer.Option(help="the case its findings are named for (default: the command)")] = None,
    expect_exit: Annotated[int, typer.Option(min=0, max=255, help="exit status the command must end with")] = 0,
    any_exit: Annotated[bool, typer.Option("--any-exit", help="accept any exit status")] = False,
    workdir: Annotated[Path | None, typer.Option(help="keep run.xml, logs and result.json here")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run one command under the sanitizer here, as you (no allowlist): cuprobe exec -t memcheck -- ./app args.
    The compute-sanitizer line you already run works too: cuprobe exec -- compute-sanitizer --tool memcheck
    --leak-check full ./app args (read into -t, -S and the program).

    Exit 0 clean (or warnings only at --fail-on error), 1 findings, 3 could not run, 2 bad input."""
    level = fail_on(fail_on_level)
    pairs = [item.partition("=") for item in env or []]
    if bad := [key for key, sep, _ in pairs if not sep or not key]:
        raise typer.BadParameter(f"expected KEY=VALUE, got {bad[0]!r}", param_hint="--env")
    if any_exit and expect_exit != 0:
        raise typer.BadParameter(f"--expect-exit {expect_exit} and --any-exit: give one", param_hint="--any-exit")
    if cwd is not None and not cwd.is_dir():
        raise typer.BadParameter(f"{cwd} is {'not a directory' if cwd.exists() else 'missing'}", param_hint="--cwd")
    options = sanitizer_option or []
    if not command[0].strip():
        raise typer.BadParameter("the command is empty: give the program to run after --", param_hint="command")
    if is_sanitizer(command):  # the user's own compute-sanitizer line: read into tool, options and program
        command, tool, options = _read_sanitizer_line(command, tool, options)
    try:
        request = ProbeRequest(
            probe="command",
            tool=tool or Tool.MEMCHECK,
            params={
                "argv": command,
                "cwd": str((cwd or Path.cwd()).resolve()),
                "env": {key: value for key, _, value in pairs},
                "timeout_s": timeout,
                "expect_exit": None if any_exit else expect_exit,
                "case": case or " ".join(command)[:1000],
            },
            timeout_s=timeout + 60,
            options=parse_options(options),
        )
        result = _run_here(request, workdir)
    except (BadRequest, ValueError) as exc:
        raise _refused(exc) from exc
    _emit(result, as_json, level)


def _read_sanitizer_line(
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


def _saved_xml(xml: Path, tool: Tool | None, roots: list[str], settings: Settings) -> ParseResult:
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


def _saved_summary(log: Path | None, prefix: str | None, settings: Settings) -> SanitizerSummary | None:
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


def _saved_tool(tool: Tool | None, parsed: ParseResult, summary: SanitizerSummary | None, log: Path | None) -> Tool:
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


@app.command()
def parse(
    xml: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="a --xml --save file")],
    log: Annotated[Path | None, typer.Option(exists=True, dir_okay=False, help="the sanitizer's text output")] = None,
    tool: ToolOption = None,
    source_root: Annotated[list[str] | None, typer.Option(help="make paths relative to this root")] = None,
    fail_on_level: FailOnOpt = "error",
    as_json: JsonFlag = False,
    prefix: Annotated[
        str | None,
        typer.Option(
            help="the --prefix the sanitizer ran with, when not its default '========= ' (the --log's lines start "
            "with it)"
        ),
    ] = None,
) -> None:
    """Findings from saved sanitizer output. Without --log there is no summary line, so never `clean`."""
    level = fail_on(fail_on_level)
    settings = _settings()
    parsed = _saved_xml(xml, tool, source_root or [str(Path.cwd())], settings)
    summary = _saved_summary(log, prefix, settings)
    if summary and summary.not_printed:
        parsed.truncated = True
    if parsed.launches.total:  # run with --dump-kernel-launches: its summary counted the launch records as errors
        discount(summary, parsed.launches, None, 0)
    used = _saved_tool(tool, parsed, summary, log)
    verdict = classify_saved(used, summary, parsed)
    result = RunResult(
        probe="(saved output)",
        tool=used,
        outcome=verdict.outcome,
        message=verdict.message,
        records=parsed.records,
        summary_count=summary.errors if summary else None,
        truncated=parsed.truncated,
        findings=parsed.findings,
    )
    _emit(result, as_json, level)


@app.command()
def check(
    strict: Annotated[bool, typer.Option(help="count probes that cannot run here as failures (exit 3)")] = False,
    timeout: Annotated[float, typer.Option(help="wall-clock limit per probe, seconds")] = 600,
    local: Annotated[
        bool, typer.Option("--local", help="run the probes in this process, one by one, without the service")
    ] = False,
) -> None:
    """Every registered probe once at its defaults, as jobs of the embedded service (SQLite store, Valkey
    broker, workers, API — nothing to set up): CPU probes run for real, GPU probes say if they cannot."""
    settings = _settings()
    with console.status("cuprobe check") as status:

        def progress(text: str) -> None:
            status.update(f"cuprobe check: {escape(text)}")

        rows = check_local(timeout, progress) if local else check_service(settings, timeout, progress)
    table = Table(title="cuprobe check" + (" (local)" if local else f" (jobs stored in {settings.database})"))
    for column in ("probe", "tool", "outcome", "what happened", *(() if local else ("job",))):
        table.add_column(column, overflow="fold")
    # A reason several probes share is said once, below the table, with the probes it applies to.
    shared = [(reason, names) for reason, names in by_reason((r.probe, r.message) for r in rows) if len(names) > 1]
    note = {reason: i for i, (reason, _) in enumerate(shared, 1)}
    for row in rows:
        outcome = Outcome(row.outcome) if row.outcome in set(Outcome) else None
        style = "green" if outcome and outcome.ran else "yellow" if outcome is Outcome.UNAVAILABLE else "red"
        shown = f"[{style}]{row.outcome}[/]" if row.outcome else "not run"
        causes = row.message.split(ALSO)
        refs = ", ".join(f"[{note[c]}]" for c in causes if c in note)
        own = ALSO.join(c for c in causes if c not in note)
        said = escape(" ".join([own, f"see {refs} below" if refs else ""]).strip())
        table.add_row(row.probe, row.tool, shown, said, *(() if local else ((row.job or "-")[: cli_jobs.SHORT_ID],)))
    console.print(table)
    for i, (reason, names) in enumerate(shared, 1):
        console.print(escape(f"[{i}] {len(names)} probes ({names_line(names)}): {reason}"))
    skipped = [r.probe for r in rows if r.outcome == Outcome.UNAVAILABLE]
    if skipped:
        console.print(f"could not run here (unavailable): {', '.join(skipped)} — see `cuprobe doctor`")
    code, line = check_verdict(rows, strict)
    console.print(f"[{'green' if code == 0 else 'red'}]{escape(line)}[/]")
    raise typer.Exit(code)


@app.command("probes")
def list_probes(
    name: Annotated[str | None, typer.Argument(help="show this probe's parameters")] = None,
) -> None:
    """List the registered probes (cuprobe's own and plug-ins), or one probe's parameters."""
    if name is not None:
        _show_probe(name)
        return
    table = Table(title="Probes")
    for column in ("name", "default tool", "tools", "needs GPU (defaults)", "summary"):
        table.add_column(column, overflow="fold")
    for probe_name in registry.available():
        try:
            probe = registry.get(probe_name)
        except Exception as exc:  # a broken plug-in must not hide the others
            table.add_row(probe_name, "-", "-", "-", f"[red]cannot load: {exc}[/]")
            continue
        table.add_row(
            probe_name,
            probe.tools[0].value,
            ",".join(t.value for t in probe.tools),
            "yes" if needs_gpu_by_default(probe_name) else "no",
            probe.summary,
        )
    console.print(table)


def _show_probe(name: str) -> None:
    try:
        probe = registry.get(name)
    except registry.UnknownProbe as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(ExitCode.USAGE) from exc
    console.print(f"[bold]{name}[/]: {escape(probe.summary)}")
    console.print(
        f"tools: {', '.join(t.value for t in probe.tools)} (default {probe.tools[0].value}); "
        f"needs a GPU at its defaults: {'yes' if needs_gpu_by_default(name) else 'no'}"
    )
    table = Table(title=f"{name} parameters (-p NAME=VALUE)")
    for column in ("name", "type", "default", "allowed", "description"):
        table.add_column(column, overflow="fold")
    for row in parameter_rows(probe.Params):
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)


@app.command()
def doctor() -> None:
    """What this machine has for running probes: GPU, driver, sanitizer, pycuda, torch (exit 3 if not ready)."""
    settings = _settings()
    gpu, driver, cuda, uuid = gpu_facts()
    ready = True
    console.print(
        f"GPU: {gpu or '[red]none found (NVML, nvidia-smi)[/]'} {uuid or ''}  "
        f"driver: {driver or '-'}  CUDA: {cuda or '-'}"
    )
    ready &= gpu is not None
    devices = visible_gpus()
    version = located_version(settings.sanitizer_path) if devices else None
    for device in devices:
        k, why = slots_for(device, len(devices), settings.gpu_slots, version, settings.confirm)
        console.print(f"  gpu{device.index}: {k} sanitizer process(es) at once ({escape(why)})")
        console.print(f"    a worker on it: {escape(warm_line(settings, k))}")
    if devices and not settings.gpu_slots and settings.confirm:  # a local sweep's batches share one set of re-runs
        local = slots_for(devices[0], len(devices), 0, version, False)[0]
        console.print(
            f"  a sweep run here (cuprobe sweep run): {local} at once (its batches share one set of the "
            "confirmation's re-runs)"
        )
    if devices and not settings.gpu_slots and (other := steadier_sanitizer(settings.sanitizer_path)):
        k = slots_for(devices[0], len(devices), 0, other[1], settings.confirm)[0]
        console.print(
            f"  another compute-sanitizer here ({other[1]}) has no such stall: CUPROBE_SANITIZER_PATH={other[0]} "
            f"gives {k} process(es) per GPU"
        )
    for source, path in candidates(settings.sanitizer_path):
        here = path.is_file()
        version = sanitizer_version(path) if here else None
        console.print(f"  {'[green]found[/]' if here else 'absent'} {source}: {path} {version or ''}")
    try:
        chosen = find_sanitizer(settings.sanitizer_path)
        console.print(f"compute-sanitizer: [green]{chosen}[/] ({sanitizer_version(chosen) or 'version unknown'})")
    except SanitizerMissing as exc:
        console.print(f"compute-sanitizer: [red]missing[/] — {escape(str(exc))}")
        ready = False
    for module, how in (
        ("pycuda", "pip install 'cuprobe[gpu]' on a machine with the CUDA driver"),
        ("torch", "pip install 'cuprobe[torch]'"),
    ):
        present = importlib.util.find_spec(module) is not None
        console.print(f"{module}: {'[green]installed[/]' if present else f'[red]missing[/] — {escape(how)}'}")
        ready &= present or module == "torch"
    console.print(
        "[green]ready for GPU probes[/]"
        if ready
        else "[yellow]not ready for GPU probes[/] (CPU probes still run: see `cuprobe probes`)"
    )
    raise typer.Exit(ExitCode.CLEAN if ready else ExitCode.NOT_RUN)


cli_jobs.register(app)  # the service commands: submit, status, results, cancel, serve, worker, beat, up
cli_gate.register(app)  # cuprobe gate SUITE


from cuprobe.service.cli import sweep as cli_sweep  # noqa: E402  # the sub-app registers after every top-level command

app.add_typer(cli_sweep.app, name="sweep")


def main() -> None:
    """The console script: refuses a removed setting still set before any command starts."""
    try:
        refuse_removed()
    except RemovedSetting as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise SystemExit(ExitCode.USAGE) from None
    app()


if __name__ == "__main__":
    main()
