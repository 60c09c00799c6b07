"""Routes for jobs: submit, read, list, findings, cancel, artifacts."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Annotated, BinaryIO

from fastapi import APIRouter, HTTPException, Query, status
from fastapi.responses import StreamingResponse

from service.api.deps import Authorized, CeleryDep, SettingsDep, StoreDep
from service.api.schemas import FindingList, JobList, JobView
from service.db.artifacts import NAMES, artifact_path, open_artifact
from service.db.store import Job, JobState
from service.models import Outcome
from service.queue import submit as job_service
from service.queue.broker import enqueue

CHUNK = 1024 * 1024
router = APIRouter(prefix="/jobs", tags=["jobs"], dependencies=[Authorized])


def _job_or_404(store: StoreDep, job_id: str) -> Job:
    job = store.get(job_id)
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no job {job_id}")
    return job


@router.post("", status_code=status.HTTP_202_ACCEPTED)
def submit(spec: job_service.JobSpec, store: StoreDep, settings: SettingsDep, celery: CeleryDep) -> JobView:
    """Queue a probe run; the job id comes back at once, the outcome later (GET /jobs/{id})."""
    try:
        job = job_service.submit(spec, store, settings, lambda j: enqueue(celery, j))
    except job_service.SubmissionError as exc:
        raise HTTPException(exc.status, {"field": exc.field, "message": exc.message}) from exc
    return JobView.of(job, 0)


@router.get("")
def list_jobs(
    store: StoreDep,
    probe: str | None = None,
    outcome: Outcome | None = None,
    state: JobState | None = None,
    since: datetime | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JobList:
    """Jobs, newest first, filtered by probe, outcome, state and creation time."""
    found = store.jobs(
        probe=probe,
        outcome=outcome.value if outcome else None,
        state=state.value if state else None,
        since=since,
        limit=limit,
    )
    counts = store.finding_counts([job.id for job in found])
    return JobList(jobs=[JobView.of(job, counts.get(job.id, 0), full=False) for job in found])


@router.get("/{job_id}")
def get_job(job_id: str, store: StoreDep) -> JobView:
    job = _job_or_404(store, job_id)
    return JobView.of(job, len(store.findings(job_id)))


@router.get("/{job_id}/findings")
def get_findings(job_id: str, store: StoreDep) -> FindingList:
    _job_or_404(store, job_id)
    return FindingList(job_id=job_id, findings=store.findings(job_id))


@router.post("/{job_id}/cancel")
def cancel(job_id: str, store: StoreDep, celery: CeleryDep) -> JobView:
    """Cancel a queued job now, or stop a running one (its probe is killed); 409 once it has a result."""
    job = _job_or_404(store, job_id)
    if JobState(job.state).terminal:
        raise HTTPException(status.HTTP_409_CONFLICT, f"job {job_id} already ended ({job.state})")
    store.cancel(job_id)
    job = _job_or_404(store, job_id)
    return JobView.of(job)


@router.get("/{job_id}/artifacts")
def list_artifacts(job_id: str, store: StoreDep) -> dict[str, object]:
    """Artifact names of the job's latest attempt that are still kept."""
    workdir = _latest_workdir(store, job_id)
    names = [name for name in NAMES if workdir and artifact_path(workdir, name)]
    return {
        "schema_version": JobView.model_fields["schema_version"].default,
        "job_id": job_id,
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
    media = (
        "application/xml"
        if name.endswith(".xml")
        else "application/json"
        if name.endswith(".json")
        else "text/plain"
    )
    return StreamingResponse(
        _chunks(opened), media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )


def _chunks(opened: BinaryIO) -> Iterator[bytes]:
    with opened:
        while chunk := opened.read(CHUNK):
            yield chunk


def _latest_workdir(store: StoreDep, job_id: str) -> Path | None:
    _job_or_404(store, job_id)
    runs = store.runs(job_id)
    return Path(runs[-1].workdir) if runs else None
