"""What the API returns (every body carries schema_version), and the body of a wait on many jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cuprobe.service.client import MAX_WAIT_S, MAX_WAITED_JOBS
from cuprobe.service.db.store import Job, JobState, as_utc
from cuprobe.service.models import SCHEMA_VERSION, Finding, Tool


class Versioned(BaseModel):
    schema_version: int = SCHEMA_VERSION


class JobView(Versioned):
    """A job as a user sees it: state, outcome, message and what it ran."""

    id: str
    probe: str
    tool: str
    params: dict[str, Any]
    queue: str
    lane: str
    label: str | None = Field(None, description="the group it was submitted in, e.g. a gate run")
    state: str
    outcome: str | None
    exit_code: int | None = Field(
        description="CLI exit code: 0 clean, 1 findings, 3 could not run; null until done"
    )
    message: str
    attempts: int
    handed_back: int = Field(
        0, description="attempts handed back when their worker stopped gracefully; not counted against max_attempts"
    )
    worker: str | None = Field(description="host:pid of the process running (or that ran) the last attempt")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    deadline_at: datetime
    findings: int | None = Field(None, description="distinct findings stored for the job")
    result: dict[str, Any] | None = None

    @classmethod
    def of(cls, job: Job, findings: int | None = None, *, full: bool = True) -> JobView:
        from cuprobe.service.models import Outcome

        # A job cancelled before it ran (or before a record was read) is stored with its state and no outcome; it
        # is shown with the outcome `cancelled`, as the outcomes table and the `outcome=cancelled` filter have it.
        outcome = job.outcome or (Outcome.CANCELLED.value if job.state == "cancelled" else None)
        exit_code = Outcome(outcome).exit_code if outcome else None
        return cls(
            id=job.id,
            probe=job.probe,
            tool=job.tool,
            params=job.request.get("params", {}),
            queue=job.queue,
            lane=job.lane,
            label=job.label,
            state=job.state,
            outcome=outcome,
            exit_code=exit_code,
            message=job.message,
            attempts=job.attempts,
            handed_back=job.handed_back or 0,
            worker=job.worker,
            created_at=as_utc(job.created_at),
            started_at=as_utc(job.started_at) if job.started_at else None,
            finished_at=as_utc(job.finished_at) if job.finished_at else None,
            deadline_at=as_utc(job.deadline_at),
            findings=findings,
            result=job.result if full else None,
        )


class JobList(Versioned):
    jobs: list[JobView]


class JobsToWaitFor(BaseModel):
    """The body of POST /jobs/wait: full job ids, and how long to hold the answer until one of them ends."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] = Field(min_length=1, max_length=MAX_WAITED_JOBS)
    wait_s: float = Field(
        0.0, ge=0, le=MAX_WAIT_S, allow_inf_nan=False, description="hold the answer up to this long (no polling)"
    )


class WaitedJobs(Versioned):
    """The jobs waited for, in the order asked, and the ids the store holds no job of."""

    jobs: list[JobView]
    missing: list[str]

    def any_ended(self) -> bool:
        """Whether there is news: a job has ended, or will never end because there is no such job."""
        return bool(self.missing) or any(JobState(job.state).terminal for job in self.jobs)


class FindingList(Versioned):
    job_id: str
    findings: list[Finding]


class ProbeView(BaseModel):
    name: str
    summary: str
    needs_gpu: bool = Field(description="at its default tool and parameters")
    tools: list[Tool]
    params_schema: dict[str, Any]


class ProbeList(Versioned):
    probes: list[ProbeView]


class HealthBrief(Versioned):
    """What /health says without the token."""

    ok: bool


class Health(HealthBrief):
    """What /health says to a token holder."""

    redis: str
    store: str
    workers: dict[str, list[str]] = Field(description="worker name -> queues it serves")
    unserved_queues: list[str] = Field(
        default_factory=list, description="queues holding jobs that no live worker serves"
    )
    registry: list[dict[str, Any]] = Field(
        default_factory=list, description="each live worker's last heartbeat: host, pids, queues, GPU, beat time"
    )


class ErrorBody(Versioned):
    error: str
    field: str | None = None
    detail: list[dict[str, Any]] = Field(default_factory=list)
