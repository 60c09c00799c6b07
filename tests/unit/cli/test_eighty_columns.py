"""At 80 columns: every --help text reads as written (wrapped between words, never cut, no break mid-sentence kept
from the source), and the probe tables break no word inside a cell."""

from __future__ import annotations

import re

import click
import pytest
import typer
from typer.testing import CliRunner

from cuprobe.probes import registry
from cuprobe.service.cli.main import app
from cuprobe.service.cli.render import parameter_rows

cli = CliRunner()
WIDE = {"COLUMNS": "80"}


def _commands() -> list[list[str]]:
    """The argv of every command and group, as `cuprobe ... --help` takes them."""
    found: list[list[str]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        found.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def _joined(text: str) -> str:
    """The text as one line, a word wrapped at its own hyphen joined again (`leak-` / `check=full`)."""
    return " ".join(re.sub(r"-\n\s+", "-", text).split())


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p) or "cuprobe")
def test_help_reads_whole_at_80_columns(path: list[str]) -> None:
    done = cli.invoke(app, [*path, "--help"], env=WIDE)
    assert done.exit_code == 0, done.output
    assert all(len(line) <= 80 for line in done.stdout.splitlines()), done.stdout
    said = _joined(done.stdout)
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    assert "…" not in done.stdout
    for param in command.params:
        if isinstance(param, click.Option) and param.help:
            assert " ".join(param.help.split()) in said, f"{param.name}'s help is not whole:\n{done.stdout}"
    if command.help:  # the docstring's paragraphs, each rewrapped (a line break in the source is not kept)
        for paragraph in command.help.split("\n\n"):
            assert " ".join(paragraph.split()) in said, done.stdout


def _words(*cells: str) -> set[str]:
    return {word for cell in cells for word in cell.split()}


def test_the_probes_table_breaks_no_word() -> None:
    done = cli.invoke(app, ["probes"], env=WIDE)
    shown = set(done.stdout.split())
    assert all(len(line) <= 80 for line in done.stdout.splitlines())
    for name in registry.available():
        probe = registry.get(name)
        missing = _words(name, ", ".join(t.value for t in probe.tools), probe.summary) - shown
        assert not missing, f"{name}: {sorted(missing)} broken:\n{done.stdout}"


@pytest.mark.parametrize("name", sorted(registry.available()))
def test_a_probes_parameter_table_breaks_no_word(name: str) -> None:
    done = cli.invoke(app, ["probes", name], env=WIDE)
    shown = set(done.stdout.split())
    rows = parameter_rows(registry.get(name).Params)
    # Words longer than a column can be (a JSON default of many items) are folded; every shorter one is whole.
    missing = {word for word in _words(*(cell for row in rows for cell in row)) if len(word) <= 16} - shown
    assert not missing, f"{sorted(missing)} broken:\n{done.stdout}"
