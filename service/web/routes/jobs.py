"""Jobs: the filterable list (live on its first page), a job's page with its findings, status and artifacts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from cuprobe.probes import registry
from cuprobe.service.db.artifacts import NAMES, artifact_path, content_type, open_artifact, read_chunks
from cuprobe.service.db.store import Job, JobState, as_utc
from cuprobe.service.models import Finding, Outcome, Tool, confirmation_counts
from cuprobe.service.web.auth import Viewer
from cuprobe.service.web.pages import PageNotFound, job_or_missing, store_of
from cuprobe.service.web.render import page

router = APIRouter(prefix="/ui/jobs", dependencies=[Viewer], include_in_schema=False)
PAGE = 50
CHOICES = {
    "tool": [t.value for t in Tool],
    "outcome": [o.value for o in Outcome],
    "state": [s.value for s in JobState],
}


@dataclass
class JobFilter:
    """The list's filters as the query string gives them; `problems` names each value that was refused."""

    probe: str = ""
    tool: str = ""
    outcome: str = ""
    state: str = ""
    date: str = ""
    label: str = ""
    before: str = ""
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, request: Request) -> JobFilter:
        q = request.query_params
        found = cls()
        for name in ("probe", "tool", "outcome", "state", "date", "label", "before"):
            setattr(found, name, q.get(name, "").strip())
        for name, allowed in CHOICES.items():
            value = getattr(found, name)
            if value and value not in allowed:
                found.problems.append(f"{name} {value!r} is not one of {', '.join(allowed)}")
                setattr(found, name, "")
        return found

    def query(self, **changes: str) -> str:
        """This filter as a query string, with `changes` applied (empty values left out)."""
        values = {k: getattr(self, k) for k in ("probe", "tool", "outcome", "state", "date", "label", "before")}
        values.update(changes)
        return urlencode({k: v for k, v in values.items() if v})

    def store_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {
            "probe": self.probe or None,
            "tool": self.tool or None,
            "outcome": self.outcome or None,
            "state": self.state or None,
            "label": self.label or None,
        }
        if self.date:
            try:
                day = date.fromisoformat(self.date)
            except ValueError:
                self.problems.append(f"date {self.date!r} is not a date (YYYY-MM-DD)")
                self.date = ""
            else:
                args["since"] = datetime.combine(day, time(), UTC)
                if day < date.max:  # the last day there is has no next day: nothing bounds it above
                    args["before"] = args["since"] + timedelta(days=1)
        if self.before:
            try:
                cursor = datetime.fromisoformat(self.before)
            except ValueError:
                self.problems.append(f"before {self.before!r} is not a time (ISO 8601)")
                self.before = ""
            else:
                cursor = cursor if cursor.tzinfo else cursor.replace(tzinfo=UTC)
                args["before"] = min(cursor, args.get("before", cursor))
        return args


def _rows(request: Request, wanted: JobFilter) -> dict[str, Any]:
    store = store_of(request)
    found = list(store.jobs(**wanted.store_args(), limit=PAGE + 1))
    more = len(found) > PAGE
    found = found[:PAGE]
    counts = store.finding_counts([j.id for j in found])
    older = wanted.query(before=as_utc(found[-1].created_at).isoformat()) if more else None
    return {"jobs": found, "counts": counts, "wanted": wanted, "older": older, "live": not wanted.before}


@router.get("", response_class=HTMLResponse)
def job_list(request: Request) -> HTMLResponse:
    wanted = JobFilter.of(request)
    context = _rows(request, wanted)
    context.update(choices=CHOICES, probes=sorted(registry.available()))
    return page(request, "jobs.html", context, status_code=400 if wanted.problems else 200)


@router.get("/rows", response_class=HTMLResponse)
def job_rows(request: Request) -> HTMLResponse:
    """The list's table body, which its first page polls."""
    return page(request, "_job_rows.html", _rows(request, JobFilter.of(request)))


def _confirmations(findings: list[Finding]) -> dict[str, int]:
    """Findings per confirmation; none at all when no finding was confirmed (other tools, a bare run): a lone
    "not confirmed" beside a sanitizer-free finding says nothing."""
    counts = {k: v for k, v in confirmation_counts(findings).items() if v}
    return {} if set(counts) <= {"not confirmed"} else counts


def _case_findings(findings: list[Finding], cases: int, case: str) -> int:
    """The findings the Findings table lists for `case` (fallout aside); in a run of one case, those with no case
    too (a bare run's expectation violation), so the Cases table agrees with the Findings table."""
    return sum(1 for f in findings if not f.fallout and (f.case == case or (cases == 1 and f.case is None)))


def _job_context(request: Request, job: Job) -> dict[str, Any]:
    store = store_of(request)
    findings: list[Finding] = store.findings(job.id)
    runs = store.runs(job.id)
    workdir = Path(runs[-1].workdir) if runs else None
    result = job.result or {}
    alive = request.app.state.registry.view().alive(job.worker) if job.state == JobState.RUNNING else None
    return {
        "job": job,
        "findings": findings,
        "confirmations": _confirmations(findings),
        "case_findings": partial(_case_findings, findings, len((job.result or {}).get("cases") or [])),
        "runs": runs,
        "artifacts": [name for name in NAMES if workdir and artifact_path(workdir, name)],
        "result": result,
        "environment": {k: v for k, v in (result.get("environment") or {}).items() if v is not None},
        "worker_alive": alive,
        "terminal": JobState(job.state).terminal,
    }


@router.get("/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: str) -> Response:
    job = job_or_missing(store_of(request), job_id)
    if job.id != job_id:  # a short id: the address to paste is the full one
        return RedirectResponse(f"/ui/jobs/{job.id}", status_code=307)
    return page(request, "job.html", _job_context(request, job))


@router.get("/{job_id}/status", response_class=HTMLResponse)
def job_status(request: Request, job_id: str) -> Response:
    """The job's state block, polled while it is queued or running; once it has ended the whole page reloads."""
    job = job_or_missing(store_of(request), job_id)
    response = page(request, "_job_status.html", _job_context(request, job))
    if JobState(job.state).terminal:
        response.headers["HX-Refresh"] = "true"
    return response


@router.get("/{job_id}/artifacts/{name}")
def artifact(request: Request, job_id: str, name: str) -> StreamingResponse:
    """One artifact of the job's latest attempt, as the API serves it (a regular file only, never a symlink)."""
    job = job_or_missing(store_of(request), job_id)
    runs = store_of(request).runs(job.id)
    opened = open_artifact(Path(runs[-1].workdir), name) if runs and name in NAMES else None
    if opened is None:
        raise PageNotFound(f"job {job.id} has no artifact {name!r} (not run yet, pruned, or not one of {NAMES})")
    return StreamingResponse(
        read_chunks(opened),
        media_type=content_type(name),
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )

