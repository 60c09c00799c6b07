"""What `cuprobe gate SUITE` does: run a suite here or through the service, judge it against the baseline, write
reports."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cuprobe.service.cli.api_url import api_url
from cuprobe.service.cli.local_token import local_token
from cuprobe.service.cli.options import unwritable
from cuprobe.service.cli.render import spelling_warnings
from cuprobe.service.client import Client
from cuprobe.service.config import get_settings
from cuprobe.service.gate import github, junit, markdown, sarif
from cuprobe.service.gate.baseline import Baseline, BaselineError, comment_lines, load_baseline, write_baseline
from cuprobe.service.gate.runs import EntryRuns, ServiceRefused, run_local, run_remote
from cuprobe.service.gate.suite import Suite, SuiteEntry, SuiteError, expand, load_suite
from cuprobe.service.gate.verdict import GateReport, judge, updated_baseline
from cuprobe.service.models import ExitCode, RunResult
from cuprobe.service.models.reasons import by_reason, names_line
from cuprobe.service.owntests.discover import DiscoveryError
from cuprobe.service.worker.gpu_slots import host_slots

out = Console()
err = Console(stderr=True)


def _refuse(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    return typer.Exit(ExitCode.USAGE)


def _check_outputs(paths: dict[str, Path | None], inputs: dict[str, Path]) -> None:
    """Refuse (exit 2) an output file that could not be written, or that is an input (the suite, the baseline it
    reads) or another output, before anything runs: a result must not be lost, nor a file the gate reads be
    overwritten, nor a pass or a could-not-run turned into a traceback's exit 1, at the end of a long gate."""
    taken = {path.resolve(): name for name, path in inputs.items()}
    for option, path in paths.items():
        if path is None:
            continue
        if why := unwritable(path):
            raise _refuse(f"{option} {path}{why}")
        if (other := taken.get(resolved := path.resolve())) is not None:
            raise _refuse(f"{option} {path} is {other} too: name another file")
        taken[resolved] = f"the file {option} writes"


def _write(outputs: list[tuple[str, Path, Callable[[Path], None]]]) -> list[str]:
    """Write each output; what could not be written (a full disk, a device), each as `--option PATH: why`."""
    failed = []
    for option, path, write in outputs:
        try:
            write(path)
        except OSError as exc:
            failed.append(f"{option} {path}: {exc.strerror or exc}")
    return failed


def _check_local_suppressions(suite: Suite) -> None:
    """With --local, a suppressions file is a path on this machine: refuse (exit 2) one that is not a file, naming
    its entry, before anything runs (through the service it names a file in the server's directory instead)."""
    for entry in suite.entries:
        value = entry.options.suppressions
        if value and not Path(value).is_file():
            raise _refuse(f"{entry.name}: suppressions file {value} does not exist (relative to {Path.cwd()})")


def _run(
    suite: Suite, local: bool, workdir: Path | None, url: str | None, token: str | None, hold_s: float
) -> list[EntryRuns]:
    total = sum(entry.repeats for entry in suite.entries)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task(f"gate {suite.name}", total=total)

        first: dict[str, str] = {}  # a reason a run could not run -> the run that said it first

        def on_result(entry: SuiteEntry, repeat: int, result: RunResult) -> None:
            style = "green" if result.outcome.ran else "red"
            what = f"{entry.case or entry.name} [{'' if entry.case else entry.probe + ' '}{entry.tool.value}]"
            run = f"{what} {repeat + 1}/{entry.repeats}"
            # A reason many runs share (no GPU here) is said in full once, then by the run that said it.
            if result.outcome.ran or first.setdefault(result.message, run) == run:
                said = result.message
            else:
                said = f"the same reason as {first[result.message]}"
            progress.console.print(f"{escape(run)}: [{style}]{result.outcome.value}[/] {escape(said)}")
            progress.advance(task)

        def on_file(entry: SuiteEntry, repeat: int, result: RunResult) -> None:
            file = f"{entry.case} ({len(entry.params.get('tests', []))} tests in one process) [{entry.tool.value}]"
            if result.outcome.ran and not result.records:
                said = "[green]ran[/]: each test judged from pytest's report"
            else:
                said = f"[yellow]running each test alone[/]: {escape(result.message)}"
            progress.console.print(f"{escape(file)} {repeat + 1}/{entry.repeats}: {said}")

        if not local:
            settings = get_settings()
            client = Client(api_url(url, settings), token or local_token(settings.data_dir))
            try:
                return run_remote(suite, client, hold_s=hold_s, on_result=on_result, on_file=on_file)
            except ServiceRefused as exc:
                raise _refuse(f"{exc} (nothing of this gate runs: the jobs already submitted were cancelled)") from exc
        settings = get_settings()
        slots = host_slots(settings)
        if workdir is not None:
            return run_local(suite, workdir, settings, on_result, slots, on_file)
        with tempfile.TemporaryDirectory(prefix="cuprobe-gate-") as tmp:
            return run_local(suite, Path(tmp), settings, on_result, slots, on_file)


def _show(report: GateReport) -> None:
    for item in report.findings:
        style = "red" if item.fails else "yellow" if item.status.fails else "dim"
        case = f" ({item.finding.case})" if item.finding.case else ""
        where = (
            f"{item.entry}{case} {item.finding.severity} {item.finding.kind} at {item.finding.location()}, "
            f"seen {item.seen}/{item.repeats}"
        )
        out.print(
            f"[{style}]{escape(item.label_confirmed)}[/]: {escape(where)} — {item.finding.signature}", soft_wrap=True
        )
    runs = [
        (
            f"{n.entry}" + (f" (repeat {n.repeat + 1})" if n.repeat else ""),
            f"{n.result.outcome.value}: {n.result.message}",
        )
        for n in report.not_run
    ]
    for reason, names in by_reason(runs):
        out.print(
            f"[red]could not run ({len(names)} run(s): {escape(names_line(names))}):[/] {escape(reason)}",
            soft_wrap=True,
        )
    for c in report.failed_controls:
        out.print(f"[red]positive control came back clean:[/] {c.entry} case {c.case}: {escape(c.reason)}")
    for e in report.fixed:
        out.print(f"[green]fixed:[/] {e.signature}")
    out.print(report.summary_line())
    out.print(f"gate {report.suite.name}: exit {report.exit_code} ({report.verdict})")


def run_gate(
    suite_file: Path,
    *,
    baseline: Path | None,
    junit_file: Path | None,
    sarif_file: Path | None,
    summary: Path | None,
    local: bool,
    update_baseline: bool,
    workdir: Path | None,
    poll: float,
    url: str | None,
    token: str | None,
) -> None:
    """Run the suite and judge it; raises typer.Exit with the verdict's code (`cuprobe gate`'s help says them)."""
    try:
        with spelling_warnings(err):
            suite = load_suite(suite_file)
    except SuiteError as exc:
        raise _refuse(str(exc)) from exc
    try:
        suite = expand(suite)
    except SuiteError as exc:
        raise _refuse(str(exc)) from exc
    except DiscoveryError as exc:
        err.print(f"[red]could not run:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(ExitCode.NOT_RUN) from exc
    baseline_path = baseline or suite.baseline_path()
    if baseline is not None and not baseline.exists() and not update_baseline:
        raise _refuse(f"baseline {baseline} does not exist (write one with --update-baseline)")
    if baseline is None and suite.baseline and not baseline_path.exists() and not update_baseline:
        raise _refuse(
            f"the suite's baseline {baseline_path} (its `baseline` key) does not exist "
            "(write one with --update-baseline)"
        )
    if workdir is not None and not local:
        raise _refuse("--workdir keeps the artifacts of runs on this machine: it needs --local")
    if workdir is not None and workdir.exists() and not workdir.is_dir():
        raise _refuse(f"--workdir {workdir} is a file: name a directory (it is created if missing)")
    outputs = {"--junit": junit_file, "--sarif": sarif_file, "--summary": summary}
    reads = {"the suite": suite_file} | ({"the baseline": baseline_path} if not update_baseline else {})
    _check_outputs(outputs | ({"--update-baseline": baseline_path} if update_baseline else {}), reads)
    if local:
        _check_local_suppressions(suite)
    try:
        known: Baseline | None = load_baseline(baseline_path) if baseline_path.exists() else None
    except BaselineError as exc:
        raise _refuse(str(exc)) from exc
    runs = _run(suite, local, workdir, url, token, poll)
    report = judge(suite, runs, known)
    failed: list[str] = []
    if update_baseline:
        if report.exit_code == ExitCode.NOT_RUN:
            err.print(f"[red]baseline not written:[/] something could not run; {baseline_path} is unchanged")
        else:
            fresh = updated_baseline(report, known)
            dropped = comment_lines(baseline_path)
            failed = _write([("--update-baseline", baseline_path, partial(write_baseline, fresh))])
            if not failed:
                err.print(f"baseline written: {baseline_path} ({len(fresh.finding)} known finding(s))")
                if dropped:
                    err.print(
                        f"  its {dropped} comment line(s) were not kept (a rewrite keeps each entry's reason: "
                        "put the why there)"
                    )
                report = judge(suite, runs, fresh)

    def write_summary(path: Path) -> None:
        path.write_text(markdown.render(report))

    written: list[tuple[str, Path | None, Callable[[Path], None]]] = [
        ("--junit", junit_file, partial(junit.write, report)),
        ("--sarif", sarif_file, partial(sarif.write, report)),
        ("--summary", summary, write_summary),
    ]
    failed += _write([(option, path, write) for option, path, write in written if path is not None])
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github.workflow_commands(report):
            typer.echo(line)
    _show(report)
    for what in failed:
        err.print(f"[red]not written:[/] {escape(what)}", soft_wrap=True)
    # A report that could not be written never lets a pass read as one: exit 2 then (a failing verdict keeps its code).
    raise typer.Exit(ExitCode.USAGE if failed and report.exit_code == ExitCode.CLEAN else report.exit_code)

