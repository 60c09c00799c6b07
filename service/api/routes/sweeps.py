"""GET /sweeps, /sweeps/{id}, /sweeps/{id}/diff: stored sweeps and what changed since the previous one (any
unique prefix of a sweep id names it, as for jobs)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, status

from cuprobe.service.api.deps import Authorized, StoreDep
from cuprobe.service.api.ids import named_or_error
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models import SCHEMA_VERSION
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.sweep.compare import NotAResult, changes
from cuprobe.service.sweep.diff import SweepDiff

router = APIRouter(prefix="/sweeps", tags=["sweeps"], dependencies=[Authorized])


def _get(store: StoreDep, sweep_id: str) -> Sweep:
    sweeps = SweepStore(store)
    return named_or_error("sweep", sweep_id, sweeps.get, sweeps.ids_starting)


@router.get("")
def list_sweeps(store: StoreDep, definition: str | None = None) -> dict[str, Any]:
    rows = SweepStore(store).list(definition)
    return {
        "schema_version": SCHEMA_VERSION,
        "sweeps": [
            {
                "id": r.id,
                "definition": r.definition,
                "state": r.state,
                "started_at": r.started_at,
                "finished_at": r.finished_at,
                "sanitizer_version": r.sanitizer_version,
            }
            for r in rows
        ],
    }


@router.get("/{sweep_id}")
def get_sweep(store: StoreDep, sweep_id: str) -> Sweep:
    return _get(store, sweep_id)


@router.get("/{sweep_id}/diff")
def get_diff(store: StoreDep, sweep_id: str) -> SweepDiff:
    sweeps = SweepStore(store)
    sweep = named_or_error("sweep", sweep_id, sweeps.for_diff, sweeps.ids_starting)
    try:
        return changes(sweeps, sweep)
    except NotAResult as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from exc
