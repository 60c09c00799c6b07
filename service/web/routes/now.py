"""Now: workers and their queues, jobs waiting and running, the last gate runs and the last sweep with its diff."""

from __future__ import annotations

import threading
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from cuprobe.service.db.overview import active_jobs, gate_runs, queue_loads
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.db.tables import SweepRow
from cuprobe.service.sweep.compare import changes
from cuprobe.service.web.auth import Viewer
from cuprobe.service.web.pages import store_of
from cuprobe.service.web.render import page
from cuprobe.service.web.workers import Roster

router = APIRouter(prefix="/ui", dependencies=[Viewer], include_in_schema=False)
DIFF_PARTS = ("new", "fixed", "persisting", "flaky", "unverified")


class DiffCounts:
    """The diff counts of finished sweeps, by (sweep, previous sweep, finished sweeps of the definition): none of
    them changes once they have finished, so the Now page reads the sweeps once per API process, not every visit."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._counts: dict[tuple[str, str | None, int], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def of(self, sweeps: SweepStore, row: SweepRow) -> dict[str, Any] | None:
        # A sweep that finishes after a later one started can change which earlier run a case is compared with:
        # the count of finished sweeps of the definition keys that.
        pair = (row.id, sweeps.previous_id(row), sweeps.done_count(row.definition))
        with self._lock:
            if pair in self._counts:
                return self._counts[pair]
        sweep = sweeps.for_diff(row.id)
        if sweep is None:
            return None
        found = changes(sweeps, sweep)
        counts: dict[str, Any] = {part: len(getattr(found, part)) for part in DIFF_PARTS}
        counts["previous"] = found.previous
        with self._lock:
            if len(self._counts) >= self.size:
                self._counts.pop(next(iter(self._counts)))
            self._counts[pair] = counts
        return counts



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
    cache: DiffCounts = request.app.state.diff_counts
    counts = cache.of(sweeps, done) if done is not None else None
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
