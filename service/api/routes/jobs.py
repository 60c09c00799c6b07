"""Routes for jobs: submit, read, list, findings, cancel, artifacts."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Annotated, TypeVar

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from cuprobe.service.api.deps import Authorized, CeleryDep, SettingsDep, StoreDep
from cuprobe.service.api.ids import named_or_error
from cuprobe.service.api.schemas import FindingList, JobList, JobsToWaitFor, JobView, WaitedJobs
from cuprobe.service.client import MAX_WAIT_S
from cuprobe.service.db.artifacts import NAMES, artifact_path, content_type, open_artifact, read_chunks
from cuprobe.service.db.store import Job, JobState
from cuprobe.service.models import Outcome, Tool
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.queue import submit as job_service
from cuprobe.service.queue.broker import enqueue

# How often a held GET /jobs/{id}?wait_s= or POST /jobs/wait reads the store anyway (a job ended by the reconciler,
# or word of its end lost with Redis); it is held at most MAX_WAIT_S.
RECHECK_S = 1.0
Read = TypeVar("Read")
router = APIRouter(prefix="/jobs", tags=["jobs"], dependencies=[Authorized])


def _job_or_404(store: StoreDep, job_id: str) -> Job:
    """The job with id `job_id`, or the one job whose id starts with it; 404 for none, 409 for several."""
    return named_or_error("job", job_id, store.get, store.ids_starting)


@router.post("", status_code=status.HTTP_202_ACCEPTED)
def submit(
    spec: job_service.JobSpec, store: StoreDep, settings: SettingsDep, celery: CeleryDep, request: Request
) -> JobView:
    """Queue a probe run; the job id comes back at once, the outcome later (GET /jobs/{id}). A job for a queue no
    live worker serves ends `unavailable` at once, unless `wait_for_worker` is set."""
    try:
        job = job_service.submit(
            spec, store, settings, lambda j: enqueue(celery, j), served=request.app.state.served_queues
        )
    except BadRequest as exc:
        raise HTTPException(exc.status, {"field": exc.field, "message": exc.message}) from exc
    return JobView.of(job, 0)


@router.get("")
def list_jobs(
    store: StoreDep,
    probe: str | None = None,
    tool: Tool | None = None,
    outcome: Outcome | None = None,
    state: JobState | None = None,
    since: datetime | None = None,
    before: datetime | None = None,
    label: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JobList:
    """Jobs, newest first, filtered by probe, tool, outcome, state, label and creation time (`since` <= created <
    `before`: pass the last job's created_at as `before` for the next page)."""
    found = store.jobs(
        probe=probe,
        tool=tool.value if tool else None,
        outcome=outcome.value if outcome else None,
        state=state.value if state else None,
        since=since,
        before=before,
        label=label,
        limit=limit,
    )
    counts = store.finding_counts([job.id for job in found])
    return JobList(jobs=[JobView.of(job, counts.get(job.id, 0), full=False) for job in found])


def _view(store: StoreDep, job_id: str) -> JobView:
    job = _job_or_404(store, job_id)
    return JobView.of(job, len(store.findings(job.id)))


async def _held(
    request: Request, job_ids: list[str], wait_s: float, read: Callable[[], Read], news: Callable[[Read], bool]
) -> Read:
    """`read()` again on word that one of `job_ids` ended, and every RECHECK_S anyway, until it brings `news` or
    `wait_s` has passed."""
    deadline = time.monotonic() + wait_s
    with request.app.state.ended.watch(*job_ids) as ended:
        found = await run_in_threadpool(read)  # it may have ended before the watch began
        while not news(found) and (left := deadline - time.monotonic()) > 0:
            with contextlib.suppress(TimeoutError):  # read the store anyway
                await asyncio.wait_for(ended.wait(), timeout=min(left, RECHECK_S))
            ended.clear()
            found = await run_in_threadpool(read)
    return found


def _ended(view: JobView) -> bool:
    return JobState(view.state).terminal


@router.get("/{job_id}")
async def get_job(
    job_id: str,
    store: StoreDep,
    request: Request,
    wait_s: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_S,
            allow_inf_nan=False,
            description="hold the answer up to this long until the job ends (no polling)",
        ),
    ] = 0.0,
) -> JobView:
    """The job; with `wait_s`, answered as soon as it ends (a worker announces it) or when `wait_s` has passed."""
    view = await run_in_threadpool(_view, store, job_id)
    if not wait_s or _ended(view):
        return view
    return await _held(request, [view.id], wait_s, partial(_view, store, view.id), _ended)


def _waited(store: StoreDep, job_ids: list[str]) -> WaitedJobs:
    jobs = store.with_ids(job_ids)
    counts = store.finding_counts(list(jobs))
    return WaitedJobs(
        jobs=[JobView.of(jobs[i], counts.get(i, 0)) for i in job_ids if i in jobs],
        missing=[i for i in job_ids if i not in jobs],
    )


@router.post("/wait")
async def wait_for_any(asked: JobsToWaitFor, store: StoreDep, request: Request) -> WaitedJobs:
    """The jobs of these full ids, answered as soon as one of them has ended (at once if one already has, or if an id
    names no job) or when `wait_s` has passed: a client waiting for many jobs asks again with those still pending."""
    job_ids = list(dict.fromkeys(asked.ids))
    waited = await run_in_threadpool(_waited, store, job_ids)
    if not asked.wait_s or waited.any_ended():
        return waited
    return await _held(request, job_ids, asked.wait_s, partial(_waited, store, job_ids), WaitedJobs.any_ended)


@router.get("/{job_id}/findings")
def get_findings(job_id: str, store: StoreDep) -> FindingList:
    job = _job_or_404(store, job_id)
    return FindingList(job_id=job.id, findings=store.findings(job.id))


@router.post("/{job_id}/cancel")
def cancel(job_id: str, store: StoreDep, celery: CeleryDep, request: Request) -> JobView:
    """Cancel a queued job now, or stop a running one (its probe is killed); 409 once it has a result."""
    job = _job_or_404(store, job_id)
    if JobState(job.state).terminal:
        how = f"{job.state}, outcome {job.outcome}" if job.outcome else job.state
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"job {job.id} already ended ({how}): there is nothing to cancel"
        )
    store.cancel(job.id)
    job = _job_or_404(store, job.id)
    if JobState(job.state).terminal:
        request.app.state.announce(job.id)
    return JobView.of(job, store.finding_counts([job.id]).get(job.id, 0))


@router.get("/{job_id}/artifacts")
def list_artifacts(job_id: str, store: StoreDep) -> dict[str, object]:
    """Artifact names of the job's latest attempt that are still kept."""
    job = _job_or_404(store, job_id)
    workdir = _latest_workdir(store, job.id)
    names = [name for name in NAMES if workdir and artifact_path(workdir, name)]
    return {
        "schema_version": JobView.model_fields["schema_version"].default,
        "job_id": job.id,
        "artifacts": names,
    }


@router.get("/{job_id}/artifacts/{name}")
def get_artifact(job_id: str, name: str, store: StoreDep) -> StreamingResponse:
    """One artifact (run.xml, stdout.txt, stderr.txt, result.json) of the job's latest attempt; only a regular file
    in the job's directory is served, never what a symlink points at."""
    if name not in NAMES:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"unknown artifact {name!r}; artifacts: {', '.join(NAMES)}"
        )
    workdir = _latest_workdir(store, job_id)
    opened = open_artifact(workdir, name) if workdir else None
    if opened is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"job {job_id} has no {name} (not run yet, pruned, or not a regular file)"
        )
    return StreamingResponse(
        read_chunks(opened),
        media_type=content_type(name),
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )



def _latest_workdir(store: StoreDep, job_id: str) -> Path | None:
    runs = store.runs(_job_or_404(store, job_id).id)
    return Path(runs[-1].workdir) if runs else None
