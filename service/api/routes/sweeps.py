"""GET /sweeps, /sweeps/{id}, /sweeps/{id}/diff: stored sweeps and what changed since the previous one (any
unique prefix of a sweep id names it, as for jobs)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, status

from service.api.deps import Authorized, StoreDep
from service.db.id_prefix import MATCHES_SHOWN, Ambiguous, by_id_prefix
from service.db.sweeps import SweepStore
from service.models.sweep import Sweep
from service.sweep.diff import SweepDiff, diff

router = APIRouter(prefix="/sweeps", tags=["sweeps"], dependencies=[Authorized])


def _resolve(sweeps: SweepStore, sweep_id: str) -> str:
    """The id of the sweep `sweep_id` names (a full id or a unique prefix); 404 for none, 409 for several."""

    def exists(given: str) -> str | None:
        return given if given in sweeps.ids_starting(given, MATCHES_SHOWN + 1) else None

    found = by_id_prefix(sweep_id, exists, sweeps.ids_starting)
    if isinstance(found, Ambiguous):
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"sweep id prefix {sweep_id} is ambiguous: it starts {', '.join(found.matches)}"
            + (" and more" if found.more else "")
            + "; give more characters",
        )
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no sweep {sweep_id}")
    return found


def _get(store: StoreDep, sweep_id: str) -> Sweep:
    sweeps = SweepStore(store)
    sweep = sweeps.get(_resolve(sweeps, sweep_id))
    if sweep is None:  # deleted in between
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
    sweep = sweeps.for_diff(_resolve(sweeps, sweep_id))
    if sweep is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no sweep {sweep_id}")
    previous = sweeps.previous_id(sweep)
    return diff(sweep, sweeps.for_diff(previous) if previous else None)
