"""The durable store: job, run and finding operations as compare-and-sets; SQLite or PostgreSQL."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, cast

from sqlalchemy import (
    create_engine,
    event,
    func,
    select,
    text,
    update,
)
from sqlalchemy.engine import CursorResult, Engine
from sqlalchemy.orm import Session, sessionmaker

from service.models import Finding, Outcome, RunResult
from service.tables import Base, FindingRow, Job, JobState, Run, as_utc, utcnow

__all__ = [
    "Base",
    "Claim",
    "ClaimVerdict",
    "FindingRow",
    "Job",
    "JobState",
    "Run",
    "Store",
    "as_utc",
    "utcnow",
]


def changed_rows(session: Session, statement: Any) -> int:
    """Rows an UPDATE changed (the compare-and-set succeeded when > 0)."""
    return cast(CursorResult[Any], session.execute(statement)).rowcount


def worker_identity() -> str:
    """host:pid of this process, so a redelivered job can tell a dead attempt from a live one."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive_here(worker: str | None) -> bool | None:
    """True/False when `worker` ran on this host (its pid alive or not); None for another host."""
    if not worker or ":" not in worker:
        return None
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


class ClaimVerdict(StrEnum):
    """What a delivered task should do with its job."""

    RUN = "run"
    ALREADY_FINISHED = "already_finished"
    RUNNING_ELSEWHERE = "running_elsewhere"
    GIVEN_UP = "given_up"
    MISSING = "missing"


@dataclass(frozen=True)
class Claim:
    verdict: ClaimVerdict
    attempt: int = 0


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL and a busy timeout: the API and several workers write one SQLite file concurrently.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite files get WAL and a busy timeout, PostgreSQL a pre-ping pool."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


class Store:
    """Jobs, runs and findings; each state change is a compare-and-set: racing workers cannot double-write."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._pid = os.getpid()

    @contextmanager
    def session(self) -> Iterator[Session]:
        if os.getpid() != self._pid:  # forked (Celery prefork): never reuse the parent's connections
            self.engine.dispose(close=False)
            self._pid = os.getpid()
        with self._sessions.begin() as session:
            yield session

    def migrate(self) -> None:
        from service.migrations import upgrade

        upgrade(self.engine)

    def ping(self) -> None:
        with self.session() as s:
            s.execute(text("SELECT 1"))

    # --- submission and reading ---

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

    def jobs(
        self,
        *,
        probe: str | None = None,
        outcome: str | None = None,
        state: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
    ) -> Sequence[Job]:
        query = select(Job).order_by(Job.created_at.desc()).limit(limit)
        if probe:
            query = query.where(Job.probe == probe)
        if outcome:
            query = query.where(Job.outcome == outcome)
        if state:
            query = query.where(Job.state == state)
        if since:
            query = query.where(Job.created_at >= since)
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

    # --- the worker side ---

    def claim(self, job_id: str, worker: str, *, max_attempts: int, stale_after_s: float, job_dir: str) -> Claim:
        """Decide whether this delivery runs the job; when it does, record the attempt (compare-and-set)."""
        for _ in range(10):
            job = self.get(job_id)
            if job is None:
                return Claim(ClaimVerdict.MISSING)
            if JobState(job.state).terminal:
                return Claim(ClaimVerdict.ALREADY_FINISHED)
            now = utcnow()
            if job.state == JobState.QUEUED and as_utc(job.deadline_at) < now:
                from service.expiry import expire_unpicked  # expiry builds on the store

                expire_unpicked(self, now)
                continue
            if job.state == JobState.RUNNING:
                alive = _alive_here(job.worker)
                fresh = job.heartbeat_at is not None and as_utc(job.heartbeat_at) > now - timedelta(
                    seconds=stale_after_s
                )
                if fresh and alive is not False and job.worker != worker:
                    return Claim(ClaimVerdict.RUNNING_ELSEWHERE)
            if job.attempts >= max_attempts:
                message = (
                    f"the job was lost with its worker {job.attempts} times (the worker process was killed: "
                    "OOM killer, a signal, a crash outside the probe); not retried again"
                )
                if self._finish_if(job_id, job.attempts, job.state, Outcome.CRASHED, message):
                    return Claim(ClaimVerdict.GIVEN_UP)
                continue
            attempt = job.attempts + 1
            with self.session() as s:
                changed = changed_rows(
                    s,
                    update(Job)
                    .where(Job.id == job_id, Job.state == job.state, Job.attempts == job.attempts)
                    .values(
                        state=JobState.RUNNING,
                        attempts=attempt,
                        worker=worker,
                        started_at=now,
                        heartbeat_at=now,
                    ),
                )
                if changed:
                    s.add(
                        Run(
                            job_id=job_id,
                            attempt=attempt,
                            worker=worker,
                            workdir=f"{job_dir}/attempt-{attempt}",
                            started_at=now,
                        )
                    )
                    return Claim(ClaimVerdict.RUN, attempt)
        return Claim(ClaimVerdict.RUNNING_ELSEWHERE)

    def heartbeat(self, job_id: str, attempt: int) -> bool:
        """Refresh a running attempt's heartbeat; returns whether cancellation was requested."""
        with self.session() as s:
            s.execute(
                update(Job)
                .where(Job.id == job_id, Job.attempts == attempt, Job.state == JobState.RUNNING)
                .values(heartbeat_at=utcnow())
            )
            return bool(s.scalar(select(Job.cancel_requested).where(Job.id == job_id)))

    def finish(self, job_id: str, attempt: int, result: RunResult, *, cancelled: bool = False) -> bool:
        """Store this attempt's result; False (and nothing written) when the job already has one."""
        summary = result.model_dump(mode="json", exclude={"findings"})
        now = utcnow()
        with self.session() as s:
            values: dict[str, Any] = {"finished_at": now, "result": summary, "message": result.message}
            if cancelled:
                values.update(
                    state=JobState.CANCELLED,
                    outcome=None,
                    message="cancelled while running; " + result.message,
                )
            else:
                values.update(state=JobState.DONE, outcome=result.outcome.value)
            changed = changed_rows(
                s,
                update(Job)
                .where(Job.id == job_id, Job.state == JobState.RUNNING, Job.attempts == attempt)
                .values(**values),
            )
            if not changed:
                return False
            for finding in result.findings:
                s.add(
                    FindingRow(
                        job_id=job_id,
                        signature=finding.signature,
                        tool=finding.tool.value,
                        kind=finding.kind,
                        case_id=finding.case or "",
                        count=finding.count,
                        finding=finding.model_dump(mode="json"),
                    )
                )
            s.execute(
                update(Run)
                .where(Run.job_id == job_id, Run.attempt == attempt)
                .values(finished_at=now, outcome=None if cancelled else result.outcome.value)
            )
            return True

    def _finish_if(self, job_id: str, attempts: int, state: str, outcome: Outcome, message: str) -> bool:
        """End a job with `outcome` if it is still in `state` at `attempts` (no run result attached)."""
        with self.session() as s:
            return bool(
                changed_rows(
                    s,
                    update(Job)
                    .where(Job.id == job_id, Job.state == state, Job.attempts == attempts)
                    .values(state=JobState.DONE, outcome=outcome.value, message=message, finished_at=utcnow()),
                )
            )

    # --- cancellation, deadlines and reconciliation ---

    def cancel(self, job_id: str) -> str | None:
        """Cancel a queued job now, or ask a running one to stop; returns the state after, None if unknown."""
        with self.session() as s:
            s.execute(
                update(Job)
                .where(Job.id == job_id, Job.state == JobState.QUEUED)
                .values(state=JobState.CANCELLED, message="cancelled before it ran", finished_at=utcnow())
            )
            s.execute(update(Job).where(Job.id == job_id, Job.state == JobState.RUNNING).values(cancel_requested=True))
            return s.scalar(select(Job.state).where(Job.id == job_id))

    def unfinished(self) -> Sequence[Job]:
        with self.session() as s:
            return s.scalars(select(Job).where(Job.state.in_([JobState.QUEUED, JobState.RUNNING]))).all()

    def give_up(self, job: Job, message: str) -> bool:
        return self._finish_if(job.id, job.attempts, job.state, Outcome.CRASHED, message)
