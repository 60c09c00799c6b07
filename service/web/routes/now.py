"""Now: workers and their queues, jobs waiting and running, the last gate runs and the last sweep with its diff."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from service.db.overview import active_jobs, gate_runs, queue_loads
from service.db.sweeps import SweepStore
from service.sweep.diff import diff
from service.web.auth import Viewer
from service.web.pages import store_of
from service.web.render import page
from service.web.workers import Roster

router = APIRouter(prefix="/ui", dependencies=[Viewer], include_in_schema=False)
DIFF_PARTS = ("new", "fixed", "persisting", "flaky", "unverified")


def _live(request: Request) -> dict[str, Any]:
    """What changes by the second: workers, queue loads, active jobs."""
    roster: Roster = request.app.state.roster
    workers, registry_error = roster.rows()
    store = store_of(request)
    served = {q for w in workers if w.alive for q in w.beat.queues}
    return {
        "workers": workers,
        "registry_error": registry_error,
        "queues": queue_loads(store),
        "served": served,
        "active": active_jobs(store),
    }


def _sweeps(request: Request) -> dict[str, Any]:
    sweeps = SweepStore(store_of(request))
    rows = sweeps.list(limit=10)
    done = next((r for r in rows if r.state == "done"), None)
    counts = None
    if done is not None:
        sweep = sweeps.get(done.id)
        if sweep is not None:
            changes = diff(sweep, sweeps.previous(sweep))
            counts = {part: len(getattr(changes, part)) for part in DIFF_PARTS}
            counts["previous"] = changes.previous  # type: ignore[assignment]
    running = [r for r in rows if r.state == "running"]
    return {"last_sweep": done, "diff_counts": counts, "running_sweeps": running}


@router.get("/", response_class=HTMLResponse)
def now(request: Request) -> HTMLResponse:
    context = {**_live(request), **_sweeps(request), "gate_runs": gate_runs(store_of(request))}
    return page(request, "now.html", context)


@router.get("/now/live", response_class=HTMLResponse)
def now_live(request: Request) -> HTMLResponse:
    """The part of Now the page polls."""
    return page(request, "_now_live.html", _live(request))
