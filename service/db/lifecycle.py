"""The job lifecycle as compare-and-sets: claim, heartbeat, finish, cancel, re-queue, hand back and give up."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update

from cuprobe.service.db.engine import changed_rows
from cuprobe.service.db.expiry import JobExpiry
from cuprobe.service.db.tables import FindingRow, Job, JobState, Run, as_utc, utcnow
from cuprobe.service.models import Outcome, RunResult


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


# The one message of a job stopped on request while it ran (the runner's result says the same).
CANCELLED_RUNNING = "stopped while running, on request: cuprobe killed the probe's process group"


def lost_with_worker(attempts: int) -> str:
    """The message of a job given up after its worker died `attempts` times (claim and reconciler alike)."""
    return (
        f"the job was lost with its worker {attempts} times (the worker process was killed or went silent: "
        "OOM killer, a signal, a crash outside the probe); not retried again"
    )


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
    # The job's request, when this delivery runs it (read by the claim: the worker need not read the job again).
    request: dict[str, Any] | None = None


class JobLifecycle(JobExpiry):
    """State changes of a job; racing workers and reconcilers cannot double-write."""

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
                self.expire_unpicked(now)
                continue
            if job.state == JobState.RUNNING:
                alive = _alive_here(job.worker)
                fresh = job.heartbeat_at is not None and as_utc(job.heartbeat_at) > now - timedelta(
                    seconds=stale_after_s
                )
                if fresh and alive is not False and job.worker != worker:
                    return Claim(ClaimVerdict.RUNNING_ELSEWHERE)
            if job.counted_attempts >= max_attempts:
                if self.give_up(job):
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
                        message=f"attempt {attempt} on {worker}",  # not the `queued` it had while waiting
                    ),
                )
                if changed:
                    if job.state == JobState.RUNNING:  # taking over a silent attempt: its run ended without a result
                        s.execute(
                            update(Run)
                            .where(Run.job_id == job_id, Run.attempt == job.attempts, Run.finished_at.is_(None))
                            .values(finished_at=now)
                        )
                    s.add(
                        Run(
                            job_id=job_id,
                            attempt=attempt,
                            worker=worker,
                            workdir=f"{job_dir}/attempt-{attempt}",
                            started_at=now,
                        )
                    )
                    return Claim(ClaimVerdict.RUN, attempt, job.request)
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

    def cancel_requested(self, job_id: str) -> bool:
        """Whether someone asked job `job_id` to stop (read-only: polled more often than the heartbeat)."""
        with self.session() as s:
            return bool(s.scalar(select(Job.cancel_requested).where(Job.id == job_id)))

    def finish(self, job_id: str, attempt: int, result: RunResult, *, cancelled: bool = False) -> bool:
        """Store this attempt's result; False (and nothing written) when the job already has one."""
        summary = result.model_dump(mode="json", exclude={"findings"})
        now = utcnow()
        with self.session() as s:
            values: dict[str, Any] = {"finished_at": now, "result": summary, "message": result.message}
            if cancelled:
                kept = f"; {len(result.findings)} finding(s) seen before the stop are kept" if result.findings else ""
                values.update(state=JobState.CANCELLED, outcome=None, message=CANCELLED_RUNNING + kept)
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

    def requeue(self, job_id: str, attempt: int, message: str, deadline_at: datetime) -> bool:
        """Put a running attempt's job back in the queue (its worker is gone, or it stopped its own probe), waiting
        for a worker until at least `deadline_at`; the attempt's run ends without a result. False when the job moved
        on meanwhile."""
        job = self.get(job_id)
        if job is None:
            return False
        now = utcnow()
        with self.session() as s:
            changed = changed_rows(
                s,
                update(Job)
                .where(Job.id == job_id, Job.state == JobState.RUNNING, Job.attempts == attempt)
                .values(
                    state=JobState.QUEUED,
                    message=message,
                    enqueued_at=None,
                    deadline_at=max(as_utc(job.deadline_at), as_utc(deadline_at)),
                ),
            )
            if changed:
                s.execute(update(Run).where(Run.job_id == job_id, Run.attempt == attempt).values(finished_at=now))
            return bool(changed)

    def hand_back(self, job_id: str, attempt: int, message: str, deadline_at: datetime, *, limit: int) -> bool:
        """Put a running attempt's job back in the queue without counting the attempt: its worker is stopping (a
        graceful stop, not a death) and has stopped the probe. The attempt's run ends without a result, marked handed
        back. False when the job moved on meanwhile, or was handed back `limit` times already (a stop then counts,
        as a lost worker does: a probe that signals its own worker cannot make its job run for ever)."""
        job = self.get(job_id)
        if job is None:
            return False
        with self.session() as s:
            changed = changed_rows(
                s,
                update(Job)
                .where(
                    Job.id == job_id,
                    Job.state == JobState.RUNNING,
                    Job.attempts == attempt,
                    Job.handed_back < limit,
                )
                .values(
                    state=JobState.QUEUED,
                    handed_back=Job.handed_back + 1,
                    message=message,
                    enqueued_at=None,
                    deadline_at=max(as_utc(job.deadline_at), as_utc(deadline_at)),
                ),
            )
            if changed:
                s.execute(
                    update(Run)
                    .where(Run.job_id == job_id, Run.attempt == attempt)
                    .values(finished_at=utcnow(), outcome=None, handed_back=True)
                )
            return bool(changed)

    def give_up(self, job: Job) -> bool:
        """End a job whose attempts all died with their worker as `crashed`; the same words whoever notices. The
        last attempt's run, left open by its dead worker, ends too (without a result, as a re-queued attempt's)."""
        ended = self._finish_if(
            job.id, job.attempts, job.state, Outcome.CRASHED, lost_with_worker(job.counted_attempts)
        )
        if ended:
            with self.session() as s:
                s.execute(
                    update(Run).where(Run.job_id == job.id, Run.finished_at.is_(None)).values(finished_at=utcnow())
                )
        return ended
