"""A job or sweep named in a route's path by its id or any unique prefix of it: the row, or 404 / 409."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from fastapi import HTTPException, status

from cuprobe.service.db.id_prefix import Ambiguous, by_id_prefix

Found = TypeVar("Found")


def named_or_error(
    kind: str, given: str, get: Callable[[str], Found | None], ids_starting: Callable[[str, int], list[str]]
) -> Found:
    """The `kind` (job, sweep) `given` names; 404 for none, 409 naming the matches for several."""
    found = by_id_prefix(given, get, ids_starting)
    if isinstance(found, Ambiguous):
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"{kind} id prefix {given} is ambiguous: it starts {', '.join(found.matches)}"
            + (" and more" if found.more else "")
            + "; give more characters",
        )
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no {kind} {given}")
    return found
