"""What every dashboard page needs from the request: the store, settings, and a not-found page for bad links."""

from __future__ import annotations

from fastapi import Request

from service.config import Settings
from service.db.store import Job, Store
from service.db.sweeps import SweepStore
from service.models.sweep import Sweep


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


def job_or_missing(store: Store, job_id: str) -> Job:
    """The job `job_id` names (a full id or a unique prefix); PageNotFound otherwise."""
    job = store.get(job_id)
    if job is not None:
        return job
    matches = store.ids_starting(job_id) if job_id else []
    if len(matches) > 1:
        raise PageNotFound(f"job id {job_id} is ambiguous: it starts {', '.join(matches)}; give more characters", 409)
    found = store.get(matches[0]) if matches else None
    if found is None:
        raise PageNotFound(f"no job {job_id}")
    return found


def sweep_or_missing(sweeps: SweepStore, sweep_id: str) -> Sweep:
    """The sweep `sweep_id` names (a full id or a unique prefix); PageNotFound otherwise."""
    found = sweeps.get(sweep_id)
    if found is not None:
        return found
    matches = sweeps.ids_starting(sweep_id) if sweep_id else []
    if len(matches) > 1:
        raise PageNotFound(f"sweep id {sweep_id} is ambiguous: it starts {', '.join(matches)}", 409)
    found = sweeps.get(matches[0]) if matches else None
    if found is None:
        raise PageNotFound(f"no sweep {sweep_id}")
    return found
