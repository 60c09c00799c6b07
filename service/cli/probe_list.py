"""`cuprobe probes [NAME]`: the registered probes, or one probe's parameters."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

from cuprobe.probes import registry
from cuprobe.service.cli.render import parameter_rows, word_table
from cuprobe.service.models import ExitCode
from cuprobe.service.probing.admission import needs_gpu_by_default

console = Console()
err = Console(stderr=True)


def list_all() -> None:
    """A table of every registered probe (cuprobe's own and plug-ins); one that cannot load says why."""
    table = word_table("Probes", "name", "tools (default first)", "GPU", "summary")
    for probe_name in registry.available():
        try:
            probe = registry.get(probe_name)
        except Exception as exc:  # a broken plug-in must not hide the others
            table.add_row(escape(probe_name), "-", "-", f"[red]cannot load: {escape(str(exc))}[/]")
            continue
        table.add_row(
            escape(probe_name),
            ", ".join(t.value for t in probe.tools),
            "yes" if needs_gpu_by_default(probe_name) else "no",
            escape(probe.summary),
        )
    console.print(table)
    console.print("GPU: whether the probe needs one at its defaults; `cuprobe probes NAME` lists its parameters")


def show_one(name: str) -> None:
    """One probe's summary, tools and parameters; exit 2 for a name no probe has."""
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
    table = word_table(f"{name} parameters (-p NAME=VALUE)", "name", "type", "default", "allowed", "description")
    for row in parameter_rows(probe.Params):
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
