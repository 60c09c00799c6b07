"""Sweeps: the list, a sweep's page (progress while it runs, its report's plots), and its diff against the previous."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models import confirmation_counts
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.reports.plots import findings_by_out_features, throughput_by_dtype
from cuprobe.service.sweep.compare import changes
from cuprobe.service.sweep.diff import SweepDiff
from cuprobe.service.web.auth import Viewer
from cuprobe.service.web.pages import store_of, sweep_or_missing
from cuprobe.service.web.render import page

router = APIRouter(prefix="/ui/sweeps", dependencies=[Viewer], include_in_schema=False)
DIFF_PARTS = ("new", "fixed", "flaky", "unverified", "persisting")


class PlotCache:
    """A finished sweep's plots never change: matplotlib draws them once per API process (the last few kept)."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._plots: OrderedDict[str, list[tuple[str, str]]] = OrderedDict()
        self._lock = threading.Lock()

    def plots(self, sweep: Sweep) -> list[tuple[str, str]]:
        with self._lock:
            if sweep.id in self._plots:
                self._plots.move_to_end(sweep.id)
                return self._plots[sweep.id]
        drawn = [
            (title, svg)
            for title, svg in (
                ("Sanitizer records per case against out_features", findings_by_out_features(sweep)),
                ("Throughput per dtype", throughput_by_dtype(sweep)),
            )
            if svg
        ]
        if sweep.state != "running":
            with self._lock:
                self._plots[sweep.id] = drawn
                while len(self._plots) > self.size:
                    self._plots.popitem(last=False)
        return drawn


def changes_of(sweeps: SweepStore, sweep_id: str) -> SweepDiff | None:
    """The diff of a stored sweep against the sweeps before it, read lean (service.sweep.compare); None for a
    sweep that is missing, failed or still running."""
    sweep = sweeps.for_diff(sweep_id)
    if sweep is None:
        return None
    return changes(sweeps, sweep) if sweep.state == "done" else None


@router.get("", response_class=HTMLResponse)
def sweep_list(request: Request, definition: str = "") -> HTMLResponse:
    rows = SweepStore(store_of(request)).list(definition or None, limit=100)
    return page(request, "sweeps.html", {"sweeps": rows, "definition": definition})


def _sweep_context(request: Request, sweep_id: str) -> dict[str, Any]:
    sweeps = SweepStore(store_of(request))
    sweep = sweep_or_missing(sweeps, sweep_id)
    row = sweeps.row(sweep.id)
    summary = (row.summary if row is not None else None) or {}
    running = sweep.state == "running"
    progress = summary.get("progress") if running else None
    heard = row.beat_at if running and row is not None else None  # its process writes it every owner.BEAT_S
    owner = summary.get("owner") if running else None
    return {
        "sweep": sweep, "sweeps": sweeps, "progress": progress, "message": summary.get("message"), "heard": heard,
        "owner": owner if isinstance(owner, dict) else None,
    }


@router.get("/{sweep_id}", response_class=HTMLResponse)
def sweep_page(request: Request, sweep_id: str) -> Response:
    context = _sweep_context(request, sweep_id)
    sweep: Sweep = context["sweep"]
    if sweep.id != sweep_id:
        return RedirectResponse(f"/ui/sweeps/{sweep.id}", status_code=307)
    changes = changes_of(context["sweeps"], sweep.id) if sweep.state == "done" else None
    findings = [f for case in sweep.cases if not case.control for f in case.findings]
    context.update(
        diff=changes,
        diff_counts={part: len(getattr(changes, part)) for part in DIFF_PARTS} if changes else None,
        counts=sweep.counts(),
        confirmations={k: v for k, v in confirmation_counts(findings).items() if v},
    )
    return page(request, "sweep.html", context)


@router.get("/{sweep_id}/progress", response_class=HTMLResponse)
def sweep_progress(request: Request, sweep_id: str) -> Response:
    """The running sweep's progress, polled; once it has ended the whole page reloads."""
    context = _sweep_context(request, sweep_id)
    response = page(request, "_sweep_progress.html", context)
    if context["sweep"].state != "running":
        response.headers["HX-Refresh"] = "true"
    return response


@router.get("/{sweep_id}/plots", response_class=HTMLResponse)
def sweep_plots(request: Request, sweep_id: str) -> HTMLResponse:
    """The sweep report's plots (inline SVG), loaded after the page."""
    sweep = sweep_or_missing(SweepStore(store_of(request)), sweep_id)
    cache: PlotCache = request.app.state.plots
    return page(request, "_sweep_plots.html", {"plots": cache.plots(sweep), "sweep": sweep})


@router.get("/{sweep_id}/diff", response_class=HTMLResponse)
def sweep_diff(request: Request, sweep_id: str) -> Response:
    sweeps = SweepStore(store_of(request))
    row = sweeps.row(sweep_id)
    if row is None:
        found = sweep_or_missing(sweeps, sweep_id)  # a short id (redirected) or none (a page saying so)
        return RedirectResponse(f"/ui/sweeps/{found.id}/diff", status_code=307)
    changes = changes_of(sweeps, sweep_id)  # None: failed or still running, which the page says
    return page(request, "sweep_diff.html", {"sweep": row, "diff": changes, "parts": DIFF_PARTS})
