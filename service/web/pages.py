"""What every dashboard page needs from the request: the store, settings, and a not-found page for bad links."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from fastapi import Request

from cuprobe.service.config import Settings
from cuprobe.service.db.id_prefix import Ambiguous, by_id_prefix
from cuprobe.service.db.store import Job, Store
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models.sweep import Sweep

Found = TypeVar("Found")


class PageNotFound(Exception):
    """A link to something the store does not hold (or an ambiguous short id): an HTML page saying so."""

    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.message, self.status = message, status


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def settings_of(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _named_or_missing(
    kind: str, given: str, get: Callable[[str], Found | None], ids_starting: Callable[[str, int], list[str]]
) -> Found:
    """The `kind` (job, sweep) `given` names (a full id or a unique prefix); PageNotFound otherwise."""
    found = by_id_prefix(given, get, ids_starting)
    if isinstance(found, Ambiguous):
        said = ", ".join(found.matches)
        raise PageNotFound(f"{kind} id {given} is ambiguous: it starts {said}; give more characters", 409)
    if found is None:
        raise PageNotFound(f"no {kind} {given}")
    return found


def job_or_missing(store: Store, job_id: str) -> Job:
    """The job `job_id` names (a full id or a unique prefix); PageNotFound otherwise."""
    return _named_or_missing("job", job_id, store.get, store.ids_starting)


def sweep_or_missing(sweeps: SweepStore, sweep_id: str) -> Sweep:
    """The sweep `sweep_id` names (a full id or a unique prefix); PageNotFound otherwise."""
    return _named_or_missing("sweep", sweep_id, sweeps.get, sweeps.ids_starting)
