"""Markdown tables for every report (gate summary, sweep summary): cells escaped so a `|` never splits a row."""

from __future__ import annotations

from collections.abc import Sequence

MAX_CELL = 300


def cell(text: object) -> str:
    """A table cell: pipes escaped (GitHub renders `\\|` as `|`, also inside code spans), newlines folded, long
    text cut."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    return flat if len(flat) <= MAX_CELL else flat[: MAX_CELL - 3] + "..."


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """The lines of a Markdown table (and a blank line after it)."""
    lines = ["| " + " | ".join(cell(c) for c in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]
