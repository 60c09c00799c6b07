"""GET /sweeps, /sweeps/{id}, /sweeps/{id}/diff: stored sweeps and what changed since the previous one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, status

from service.api.deps import Authorized, StoreDep
from service.db.sweeps import SweepStore
from service.models.sweep import Sweep
from service.sweep.diff import SweepDiff, diff

router = APIRouter(prefix="/sweeps", tags=["sweeps"], dependencies=[Authorized])


def _get(store: StoreDep, sweep_id: str) -> Sweep:
    sweep = SweepStore(store).get(sweep_id)
    if sweep is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no sweep {sweep_id}")
    return sweep


@router.get("")
def list_sweeps(store: StoreDep, definition: str | None = None) -> dict[str, Any]:
    rows = SweepStore(store).list(definition)
    return {
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
        ]
    }


@router.get("/{sweep_id}")
def get_sweep(store: StoreDep, sweep_id: str) -> Sweep:
    return _get(store, sweep_id)


@router.get("/{sweep_id}/diff")
def get_diff(store: StoreDep, sweep_id: str) -> SweepDiff:
    sweeps = SweepStore(store)
    sweep = sweeps.for_diff(sweep_id)
    if sweep is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no sweep {sweep_id}")
    previous = sweeps.previous_id(sweep)
    return diff(sweep, sweeps.for_diff(previous) if previous else None)
