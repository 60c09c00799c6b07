"""Runs that could not run, grouped by their reason: one reason is said once, with what it applies to."""

from __future__ import annotations

from collections.abc import Iterable

# Names listed with a reason before "and N more".
NAMES_SHOWN = 8
# Joins the separate causes of one `unavailable` (no GPU, no sanitizer): each is grouped on its own.
ALSO = "; also: "


def by_reason(items: Iterable[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(name, reason) pairs as (cause, names) in first-seen order; a reason of several causes counts in each."""
    groups: dict[str, list[str]] = {}
    for name, reason in items:
        for cause in reason.split(ALSO):
            groups.setdefault(cause, []).append(name)
    return list(groups.items())


def names_line(names: list[str], shown: int = NAMES_SHOWN) -> str:
    """`a, b, c and 12 more`: the first `shown` names and a count of the rest."""
    rest = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {rest} more" if rest > 0 else "")
