"""`cuprobe`: a thin typer shell over the library, ending with a meaningful exit code.

Each command imports what it needs when it runs: `cuprobe --version` and `--help` load typer and nothing of the
service (pydantic, SQLAlchemy, Celery, torch), so they answer at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuprobe import __version__
from cuprobe.service.cli import gate as cli_gate
from cuprobe.service.cli import jobs as cli_jobs
from cuprobe.service.cli.options import FailOnOpt, SanitizerOpt, fail_on
from cuprobe.service.removed_settings import RemovedSetting, refuse_removed
from cuprobe.tool import Tool

app = typer.Typer(
    help="cuprobe: run GPU kernel probes under compute-sanitizer and report honest outcomes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


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


# What `cuprobe parse` reads, said where a file is not that.
SAVE_HINT = (
    "cuprobe parse reads the file compute-sanitizer writes with --xml --save FILE, e.g. compute-sanitizer --tool "
    "memcheck --xml --save run.xml ./app; pass its text output with --log"
)
ToolOption = Annotated[Tool | None, typer.Option("--tool", "-t", help="sanitizer tool, or none for a bare run")]
JsonFlag = Annotated[bool, typer.Option("--json", help="print the RunResult as JSON")]


@app.command()
def run(
    probe: Annotated[str, typer.Argument(help="probe name (see `cuprobe probes`)")],
    tool: ToolOption = None,
    param: cli_jobs.ParamOpt = None,
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
    from cuprobe.service.cli.local import emit, refused, run_here
    from cuprobe.service.cli.options import parse_options
    from cuprobe.service.models import ProbeRequest
    from cuprobe.service.probing.admission import BadRequest

    level = fail_on(fail_on_level)
    try:
        request = ProbeRequest(
            probe=probe,
            tool=tool,
            params=cli_jobs.parse_params(param or [], None, probe),
            timeout_s=timeout,
            kernel_filter=kernel or [],
            confirm=confirm,
            show_backtrace=backtrace,
            options=parse_options(sanitizer_option or []),
        )
        result = run_here(request, workdir)
    except (BadRequest, ValueError) as exc:
        raise refused(exc) from exc
    raise emit(result, as_json, level)


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
    from cuprobe.probes.command import is_sanitizer
    from cuprobe.service.cli.local import emit, read_sanitizer_line, refused, run_here
    from cuprobe.service.cli.options import parse_options
    from cuprobe.service.models import ProbeRequest
    from cuprobe.service.probing.admission import BadRequest

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
        command, tool, options = read_sanitizer_line(command, tool, options)
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
        result = run_here(request, workdir)
    except (BadRequest, ValueError) as exc:
        raise refused(exc) from exc
    raise emit(result, as_json, level)


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
    from cuprobe.service.cli.local import emit, settings_or_exit
    from cuprobe.service.cli.saved import saved_summary, saved_tool, saved_xml
    from cuprobe.service.models import RunResult
    from cuprobe.service.sanitizer.classify import classify_saved
    from cuprobe.service.sanitizer.launches import discount

    level = fail_on(fail_on_level)
    settings = settings_or_exit()
    parsed = saved_xml(xml, tool, source_root or [str(Path.cwd())], settings)
    summary = saved_summary(log, prefix, settings)
    if summary and summary.not_printed:
        parsed.truncated = True
    if parsed.launches.total:  # run with --dump-kernel-launches: its summary counted the launch records as errors
        discount(summary, parsed.launches, None, 0)
    used = saved_tool(tool, parsed, summary, log)
    verdict = classify_saved(used, summary, parsed)
    result = RunResult(
        probe="(saved output)",
        tool=used,
        outcome=verdict.outcome,
        message=f"{verdict.message} ({SAVE_HINT})" if parsed.error else verdict.message,
        records=parsed.records,
        summary_count=summary.errors if summary else None,
        truncated=parsed.truncated,
        findings=parsed.findings,
    )
    raise emit(result, as_json, level)


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
    from rich.markup import escape
    from rich.table import Table

    from cuprobe.service.cli.check import check_local, check_service, check_verdict
    from cuprobe.service.cli.local import console, settings_or_exit
    from cuprobe.service.models import Outcome
    from cuprobe.service.models.reasons import ALSO, by_reason, names_line

    settings = settings_or_exit()
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
    from cuprobe.service.cli.probe_list import list_all, show_one

    if name is None:
        list_all()
    else:
        show_one(name)


@app.command()
def doctor() -> None:
    """What this machine has for running probes: GPU, driver, sanitizer, pycuda, torch (exit 3 if not ready)."""
    from cuprobe.service.cli.doctor import diagnose
    from cuprobe.service.cli.local import settings_or_exit

    raise typer.Exit(diagnose(settings_or_exit()))


cli_jobs.register(app)  # the service commands: submit, status, results, cancel, serve, worker, beat, up
cli_gate.register(app)  # cuprobe gate SUITE


from cuprobe.service.cli import sweep as cli_sweep  # noqa: E402  # the sub-app registers after every top-level command

app.add_typer(cli_sweep.app, name="sweep")


def main() -> None:
    """The console script: refuses a removed setting still set before any command starts."""
    try:
        refuse_removed()
    except RemovedSetting as exc:
        from cuprobe.service.models import ExitCode

        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(ExitCode.USAGE) from None
    app()


if __name__ == "__main__":
    main()
