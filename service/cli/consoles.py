"""The CLI's consoles, made when a command prints: rich takes tens of milliseconds to load, `cuprobe --version`
needs none of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def stdout() -> Console:
    """A console on standard output (the width is read from the terminal or COLUMNS as it prints)."""
    from rich.console import Console

    return Console()


def stderr() -> Console:
    """A console on standard error: progress, warnings and errors, so a redirected stdout holds only the result."""
    from rich.console import Console

    return Console(stderr=True)


def escape(text: str) -> str:
    """`text` with rich's markup brackets escaped: a message that quotes the user's input prints as written."""
    from rich.markup import escape as escaped

    return escaped(text)
