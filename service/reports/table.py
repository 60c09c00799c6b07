"""Markdown tables for every report (gate summary, sweep summary): cells escaped so a `|` never splits a row."""

from __future__ import annotations

from collections.abc import Sequence

MAX_CELL = 300


def clipped(text: str, limit: int) -> str:
    """`text` at most `limit` characters long, cut after a whole word and marked ` ...` where it was longer."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 4]
    words = cut.rsplit(None, 1)[0] if " " in cut.strip() else cut  # a single word longer than the limit is cut
    return words.rstrip() + " ..."


def cell(text: object) -> str:
    """A table cell: pipes escaped (GitHub renders `\\|` as `|`, also inside code spans), newlines folded, long
    text cut after a whole word."""
    return clipped(" ".join(str(text).split()).replace("|", "\\|"), MAX_CELL)


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """The lines of a Markdown table (and a blank line after it)."""
    lines = ["| " + " | ".join(cell(c) for c in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]
