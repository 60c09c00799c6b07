"""`cuprobe gate SUITE`: run a suite here or through the service, judge it against the baseline, write reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuprobe.service.cli.jobs import TokenOpt, UrlOpt


def gate(
    suite_file: Annotated[Path, typer.Argument(metavar="SUITE", help="suite TOML file")],
    baseline: Annotated[Path | None, typer.Option(help="baseline TOML (default: the suite's own, if present)")] = None,
    junit_file: Annotated[Path | None, typer.Option("--junit", help="write JUnit XML here")] = None,
    sarif_file: Annotated[Path | None, typer.Option("--sarif", help="write SARIF 2.1.0 here")] = None,
    summary: Annotated[
        Path | None, typer.Option(help="write the Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)")
    ] = None,
    local: Annotated[
        bool, typer.Option("--local", help="run the probes on this machine, not through the service")
    ] = False,
    update_baseline: Annotated[
        bool,
        typer.Option("--update-baseline", help="write the baseline from this run (refused if anything could not run)"),
    ] = False,
    workdir: Annotated[Path | None, typer.Option(help="with --local: keep each run's artifacts here")] = None,
    poll: Annotated[
        float | None,
        typer.Option(
            help="longest one request to the service is held while no run ends, seconds (each run is seen as it "
            "ends; default: the longest the API holds one)",
            show_default=False,
        ),
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Run SUITE and judge it: exit 0 pass, 1 new or expired findings, 3 something could not run, 2 bad input."""
    from cuprobe.service.cli.gate_run import run_gate
    from cuprobe.service.client import MAX_WAIT_S

    run_gate(
        suite_file,
        baseline=baseline,
        junit_file=junit_file,
        sarif_file=sarif_file,
        summary=summary,
        local=local,
        update_baseline=update_baseline,
        workdir=workdir,
        poll=MAX_WAIT_S if poll is None else poll,
        url=url,
        token=token,
    )


def register(app: typer.Typer) -> None:
    """Add `cuprobe gate` to the `cuprobe` Typer app."""
    app.command("gate")(gate)
