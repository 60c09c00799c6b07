"""Reading and adding jobs, their runs and findings."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, or_, select, update

from cuprobe.service.db.engine import Database
from cuprobe.service.db.tables import FindingRow, Job, JobState, Run, in_utc, utcnow
from cuprobe.service.models import Finding


class JobQueries(Database):
    """Submission and reads: nothing here changes a job's state."""

    def add_job(self, job: Job) -> Job:
        with self.session() as s:
            s.add(job)
        return job

    def mark_enqueued(self, job_id: str) -> None:
        with self.session() as s:
            s.execute(update(Job).where(Job.id == job_id).values(enqueued_at=utcnow(), enqueues=Job.enqueues + 1))

    def get(self, job_id: str) -> Job | None:
        with self.session() as s:
            return s.get(Job, job_id)

    def with_ids(self, job_ids: Sequence[str]) -> dict[str, Job]:
        """The jobs of these ids, by id; an id the store does not hold is left out."""
        with self.session() as s:
            return {job.id: job for job in s.scalars(select(Job).where(Job.id.in_(list(job_ids))))}

    def ids_starting(self, prefix: str, limit: int = 10) -> list[str]:
        """Ids of jobs that start with `prefix` (at most `limit`), so a short id shown to a user works."""
        with self.session() as s:
            return list(s.scalars(select(Job.id).where(Job.id.startswith(prefix, autoescape=True)).limit(limit)))

    def jobs(
        self,
        *,
        probe: str | None = None,
        tool: str | None = None,
        outcome: str | None = None,
        state: str | None = None,
        since: datetime | None = None,
        before: datetime | None = None,
        label: str | None = None,
        limit: int = 100,
    ) -> Sequence[Job]:
        """Jobs newest first; `since` and `before` bound the creation time (`before` pages back through a list)."""
        query = select(Job).order_by(Job.created_at.desc()).limit(limit)
        if probe:
            query = query.where(Job.probe == probe)
        if tool:
            query = query.where(Job.tool == tool)
        if outcome == JobState.CANCELLED.value:  # a cancelled job is stored with its state, and no outcome
            query = query.where(or_(Job.outcome == outcome, Job.state == JobState.CANCELLED))
        elif outcome:
            query = query.where(Job.outcome == outcome)
        if state:
            query = query.where(Job.state == state)
        # In UTC: SQLite compares the stored UTC wall time with the bound's own, whatever its offset.
        if since:
            query = query.where(Job.created_at >= in_utc(since))
        if before:
            query = query.where(Job.created_at < in_utc(before))
        if label:
            query = query.where(Job.label == label)
        with self.session() as s:
            return s.scalars(query).all()

    def findings(self, job_id: str) -> list[Finding]:
        with self.session() as s:
            rows = s.scalars(select(FindingRow).where(FindingRow.job_id == job_id).order_by(FindingRow.id))
            return [Finding.model_validate(row.finding) for row in rows]

    def finding_counts(self, job_ids: Sequence[str]) -> dict[str, int]:
        """Number of distinct findings per job."""
        with self.session() as s:
            rows = s.execute(
                select(FindingRow.job_id, func.count())
                .where(FindingRow.job_id.in_(list(job_ids)))
                .group_by(FindingRow.job_id)
            ).all()
            return {job_id: int(count) for job_id, count in rows}

    def runs(self, job_id: str) -> Sequence[Run]:
        with self.session() as s:
            return s.scalars(select(Run).where(Run.job_id == job_id).order_by(Run.attempt)).all()

    def busy_queues(self) -> set[str]:
        """Queues that hold queued or running jobs."""
        with self.session() as s:
            return set(
                s.scalars(select(Job.queue).where(Job.state.in_([JobState.QUEUED, JobState.RUNNING])).distinct())
            )

    def unfinished(self) -> Sequence[Job]:
        with self.session() as s:
            return s.scalars(select(Job).where(Job.state.in_([JobState.QUEUED, JobState.RUNNING]))).all()
