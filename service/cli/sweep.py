"""`cuprobe sweep run|show|diff`: run a sweep definition here, and read stored sweeps and their diffs."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cuprobe.service.cli.consoles import escape, stderr, stdout
from cuprobe.service.cli.options import unwritable

if TYPE_CHECKING:  # each command imports what it uses when it runs: `cuprobe --help` stays fast
    from cuprobe.service.config import Settings
    from cuprobe.service.db.sweeps import SweepStore
    from cuprobe.service.models.sweep import Sweep

app = typer.Typer(help="Sweeps: many probes x parameters x tools, stored and diffed against the last one.")


def _sweeps() -> tuple[SweepStore, Settings]:
    from cuprobe.service.config import get_settings
    from cuprobe.service.db.store import Store
    from cuprobe.service.db.sweeps import SweepStore

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(settings.database)
    store.migrate()
    return SweepStore(store), settings


def _sweep(sweeps: SweepStore, sweep_id: str) -> Sweep:
    """The sweep with this id or the one whose id starts with it; exit 2 naming the matches otherwise."""
    from cuprobe.service.db.id_prefix import Ambiguous, by_id_prefix

    found = by_id_prefix(sweep_id, sweeps.get, sweeps.ids_starting)
    if isinstance(found, Ambiguous):
        said = f"sweep id prefix {sweep_id} is ambiguous: it starts {', '.join(found.matches)}; give more characters"
    elif found is None:
        said = f"no sweep {sweep_id} (`cuprobe sweep show` lists them)"
    else:
        return found
    stderr().print(f"[red]{escape(said)}[/red]")
    raise typer.Exit(2)


@app.command("run")
def run_cmd(
    definition: Annotated[Path, typer.Argument(help="sweep definition (TOML), e.g. suites/nightly.toml")],
    report: Annotated[Path | None, typer.Option(help="write report.html and summary.md into this folder")] = None,
    slots: Annotated[
        int, typer.Option(help="sanitizer processes at once (0: CUPROBE_GPU_SLOTS, else this GPU's default)")
    ] = 0,
) -> None:
    """Run DEFINITION on this machine with a progress bar, store it, print what changed (exit 3: a case could
    not run, 1: new findings, 0: otherwise)."""
    from rich.progress import Progress

    from cuprobe.service.cli.interrupt import sigterm_as_interrupt
    from cuprobe.service.cli.render import spelling_warnings
    from cuprobe.service.models import ExitCode
    from cuprobe.service.reports.html import html
    from cuprobe.service.reports.markdown import markdown
    from cuprobe.service.sweep.checkout import SourceError
    from cuprobe.service.sweep.compare import changes as changes_of
    from cuprobe.service.sweep.culprits import bisect_changes, remove_checkout
    from cuprobe.service.sweep.definition import DefinitionError, load_definition
    from cuprobe.service.sweep.execute import LocalRunner, run_sweep
    from cuprobe.service.sweep.notify import notify, webhook_problem
    from cuprobe.service.sweep.own_tests import check_out
    from cuprobe.service.sweep.plan import plan
    from cuprobe.service.worker.gpu_slots import host_slots

    try:
        with spelling_warnings(stderr()):
            parsed = load_definition(definition)
        plan(parsed)  # every process's request through admission before the sweep is stored as running
    except DefinitionError as exc:
        stderr().print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
        raise typer.Exit(ExitCode.USAGE) from exc
    if report is not None and report.exists() and not report.is_dir():
        said = f"--report {report} is a file: it names a folder for report.html and summary.md"
        stderr().print(f"[red]{escape(said)}[/red]")
        raise typer.Exit(ExitCode.USAGE)
    if report is not None:  # made now, not after a night of probes: a folder that cannot be made is said first
        try:
            report.mkdir(parents=True, exist_ok=True)
            if not os.access(report, os.W_OK):
                raise PermissionError(13, "not writable")
        except OSError as exc:
            stderr().print(f"[red]{escape(f'--report {report}: {exc.strerror or exc}')}[/red]")
            raise typer.Exit(ExitCode.USAGE) from exc
    sweeps, settings = _sweeps()
    if settings.sweep_webhook_url and (bad := webhook_problem(settings.sweep_webhook_url)):
        stderr().print(f"[red]{escape(f'CUPROBE_SWEEP_WEBHOOK_URL: {bad}')}[/red]")
        raise typer.Exit(ExitCode.USAGE)
    sweep_id = uuid.uuid4().hex
    sweeps.start(sweep_id, parsed.name)
    sigterm_as_interrupt()  # `kill`, a CI job's timeout: stored as failed, like Ctrl-C
    with Progress(console=stderr()) as bar:  # stderr: a redirected stdout holds only the summary
        task = bar.add_task(f"sweep {parsed.name}", total=None)

        finished = [0]  # processes finished: what an interrupted sweep's stored reason says

        def progress(done: int, total: int, what: str) -> None:
            finished[0] = done
            bar.update(task, completed=done, total=total, description=f"{parsed.name}: {what}")
            sweeps.progress(sweep_id, done, total, what)  # the dashboard shows it while the sweep runs

        checkout = None
        try:
            with sweeps.beating(sweep_id):  # a store shared with other hosts: they see this sweep is alive
                if parsed.repo is not None:
                    bar.update(task, description=f"{parsed.name}: checking out {parsed.repo.url} {parsed.repo.branch}")
                    checkout = check_out(parsed, settings)
                    # Findings in the repository's files are named from its root, as in a gate run inside it.
                    settings = settings.model_copy(
                        update={"source_roots": [*settings.source_roots, str(checkout.path)]}
                    )
                runner = LocalRunner(settings.data_dir / "sweeps" / sweep_id, settings, slots or host_slots(settings))
                sweep = run_sweep(parsed, runner, sweep_id=sweep_id, progress=progress, checkout=checkout)
            sweeps.save(sweep)
        except (SourceError, DefinitionError) as exc:  # the repository could not be had, built or its tests listed
            sweeps.fail(sweep_id, str(exc))
            stderr().print(f"[red]{escape(str(exc))}[/red]", soft_wrap=True)
            raise typer.Exit(ExitCode.NOT_RUN) from exc
        except BaseException as exc:  # interrupted or broken: the stored sweep says so instead of `running`
            if checkout is not None:
                remove_checkout(checkout)
            if not isinstance(exc, KeyboardInterrupt):
                sweeps.fail(sweep_id, f"{type(exc).__name__}: {exc}")
                raise
            said = f"interrupted (Ctrl-C or SIGTERM) after {finished[0]} finished process(es); nothing kept"
            sweeps.fail(sweep_id, said)
            stderr().print(f"sweep {sweep_id} stopped: its running probes were killed and it is stored as failed")
            raise typer.Exit(ExitCode.NOT_RUN) from exc
    changes = changes_of(sweeps, sweep)
    if checkout is not None:
        try:
            with Progress(console=stderr()) as bar:
                bar.add_task(f"sweep {parsed.name}: bisecting new and fixed findings", total=None)
                found = bisect_changes(sweep, changes, sweeps, parsed, checkout, settings)
            if found:
                sweep = sweep.model_copy(update={"bisections": found})
                sweeps.save(sweep)
        finally:
            remove_checkout(checkout)
    told = notify(changes, settings.sweep_webhook_url, sweep.bisections)
    if told:
        stderr().print(told, markup=False, highlight=False)  # stderr: a redirected stdout holds only the summary
    summary = markdown(sweep, changes)
    unwritten = None
    if report:
        try:
            report.mkdir(parents=True, exist_ok=True)
            (report / "report.html").write_text(html(sweep, changes))
            (report / "summary.md").write_text(summary)
        except OSError as exc:  # the sweep is stored: say what was not written, after the summary
            unwritten = f"--report {report}: not written: {exc.strerror or exc}"
    stdout().print(summary, markup=False, highlight=False, soft_wrap=True)
    stderr().print(stored_where(sweep_id, settings), markup=False, highlight=False, soft_wrap=True)
    verdict = (
        ExitCode.NOT_RUN
        if any(not c.outcome.ran for c in sweep.cases)
        else ExitCode.FINDINGS
        if changes.new
        else ExitCode.CLEAN
    )
    if unwritten:
        stderr().print(f"[red]{escape(unwritten)}[/red]")
    raise typer.Exit(ExitCode.USAGE if unwritten and verdict == ExitCode.CLEAN else verdict)


def stored_where(sweep_id: str, settings: Settings) -> str:
    """Where `cuprobe sweep run` stored its sweep, and who sees it there: the SQLite file under the data directory
    (relative to where the command ran, unless CUPROBE_DATA_DIR says otherwise), or the database of its URL."""
    from sqlalchemy.engine import make_url

    shown = sweep_id[:12]  # as the summary names it
    if settings.database_url:
        where = f"{make_url(settings.database_url).render_as_string(hide_password=True)} (CUPROBE_DATABASE_URL)"
        who = "a `cuprobe up` or `cuprobe serve` with the same CUPROBE_DATABASE_URL"
    else:
        where = f"{(settings.data_dir / 'cuprobe.db').resolve()} (CUPROBE_DATA_DIR={settings.data_dir})"
        who = "a `cuprobe up` started with the same CUPROBE_DATA_DIR (or in this directory, by default)"
    return f"sweep {shown} stored in {where}: `cuprobe sweep show {shown}` shows it, and so does {who}"


@app.command("show")
def show_cmd(
    sweep_id: Annotated[str | None, typer.Argument(help="sweep id; the list of sweeps when omitted")] = None,
    html_out: Annotated[Path | None, typer.Option("--html", help="write the HTML report here")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List stored sweeps, or show one (Markdown, JSON, or an HTML report)."""
    from cuprobe.service.models import ExitCode
    from cuprobe.service.reports.html import html
    from cuprobe.service.reports.markdown import markdown
    from cuprobe.service.sweep.compare import changes as changes_of

    if html_out is not None and (why := unwritable(html_out)):
        stderr().print(f"[red]{escape(f'--html {html_out}{why}')} (name a file in a folder that exists)[/red]")
        raise typer.Exit(ExitCode.USAGE)
    sweeps, settings = _sweeps()
    if sweep_id is None:
        rows = sweeps.list()
        if rows and (stored := sweeps.count()) > len(rows):  # on stderr: the list (and its JSON) stays the list
            stderr().print(f"the {len(rows)} newest of {stored} sweeps; `cuprobe sweep show ID` shows any of them")
        if as_json:
            listed = [
                {"id": r.id, "definition": r.definition, "state": r.state, "started_at": r.started_at} for r in rows
            ]
            typer.echo(json.dumps(listed, default=str, indent=1))
            return
        if not rows:
            stdout().print(f"no sweeps stored in {settings.database} yet: `cuprobe sweep run DEFINITION` runs one")
            return
        stdout().print(f"{'id':32}  {'definition':20} {'state':8} started (UTC)", highlight=False)
        for row in rows:
            stdout().print(f"{row.id}  {row.definition:20} {row.state:8} {row.started_at:%Y-%m-%d %H:%M}")
        return
    sweep = _sweep(sweeps, sweep_id)
    changes = changes_of(sweeps, sweep) if sweep.state == "done" else None  # else the report says it is no result
    if html_out:
        try:
            html_out.write_text(html(sweep, changes))
        except OSError as exc:
            stderr().print(f"[red]{escape(f'--html {html_out}: not written: {exc.strerror or exc}')}[/red]")
            raise typer.Exit(ExitCode.USAGE) from exc
    if as_json:
        typer.echo(sweep.model_dump_json(indent=1))
    else:
        stdout().print(markdown(sweep, changes), markup=False, highlight=False, soft_wrap=True)


@app.command("diff")
def diff_cmd(
    sweep_id: Annotated[str, typer.Argument(help="sweep id")],
    against: Annotated[
        str | None,
        typer.Option(
            help="another sweep id, compared case by case (default: the previous of its definition, and for a case "
            "it could not run, that case's last complete run)"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the diff as JSON")] = False,
) -> None:
    """What changed since the previous sweep of the same definition (Markdown; --json: JSON): exit 1 when anything
    changed (a finding flaky again is not a change), 3 for a sweep that failed or still runs."""
    from cuprobe.service.models import ExitCode
    from cuprobe.service.reports.markdown import changes_lines
    from cuprobe.service.sweep.compare import changes as changes_of
    from cuprobe.service.sweep.diff import diff

    sweeps, _ = _sweeps()
    sweep = _sweep(sweeps, sweep_id)
    other = _sweep(sweeps, against) if against else None
    if unfinished := [s for s in (sweep, other) if s is not None and s.state != "done"]:
        stderr().print(f"sweep {unfinished[0].id} is {unfinished[0].state}, not a result: there is nothing to diff")
        raise typer.Exit(ExitCode.NOT_RUN)
    if other is not None:
        for note in against_notes(sweep, other):  # on stderr: stdout stays the diff
            stderr().print(note, markup=False, highlight=False)
    changes = diff(sweep, other) if other else changes_of(sweeps, sweep)
    if as_json:
        typer.echo(changes.model_dump_json(indent=1))
    else:
        typer.echo("\n".join(changes_lines(changes)).rstrip())
    raise typer.Exit(ExitCode.FINDINGS if changes.changed else ExitCode.CLEAN)


def against_notes(sweep: Sweep, other: Sweep) -> list[str]:
    """What a user comparing `sweep` with `--against` `other` may not mean: the same sweep, another definition (its
    cases only in one of them count as new or fixed), or a later sweep (what is new is then what went away)."""
    if other.id == sweep.id:
        return [f"--against {other.id} is the sweep itself: nothing can have changed"]
    notes = []
    if other.definition != sweep.definition:
        notes.append(
            f"--against {other.id} is a sweep of {other.definition!r}, not {sweep.definition!r}: a case only one of "
            "them runs counts as new or fixed"
        )
    if other.started_at > sweep.started_at:
        notes.append(
            f"--against {other.id} started after {sweep.id}: `new` is what {sweep.id} has and the later one lacks"
        )
    return notes

