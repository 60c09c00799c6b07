"""Any unique prefix of a job or sweep id names it: the one match, none, or the ids it is ambiguous between."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

# Ids an ambiguous prefix names at most; a user gives more characters rather than reading a long list.
MATCHES_SHOWN = 10

Found = TypeVar("Found")


@dataclass(frozen=True)
class Ambiguous:
    """A prefix several ids start with: the first MATCHES_SHOWN of them, and whether further ones do too."""

    matches: list[str]
    more: bool


def by_id_prefix(
    given: str, get: Callable[[str], Found | None], ids_starting: Callable[[str, int], list[str]]
) -> Found | Ambiguous | None:
    """What `given` names: the row with that id, else the one whose id starts with it; Ambiguous for several,
    None for none (an empty id names nothing). Ids are lowercase hex: a prefix in capitals names the same rows on
    every store (SQLite's LIKE ignores case, PostgreSQL's does not)."""
    given = given.lower()
    exact = get(given)
    if exact is not None or not given:
        return exact
    matches = ids_starting(given, MATCHES_SHOWN + 1)
    if len(matches) > 1:
        return Ambiguous(matches[:MATCHES_SHOWN], more=len(matches) > MATCHES_SHOWN)
    return get(matches[0]) if matches else None
