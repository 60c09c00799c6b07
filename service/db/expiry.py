"""Queued jobs that end `unavailable` without a run: past their deadline, or on a queue no live worker serves."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from cuprobe.service.db.engine import changed_rows
from cuprobe.service.db.jobs import JobQueries
from cuprobe.service.db.tables import Job, JobState, utcnow
from cuprobe.service.models import Outcome


class JobExpiry(JobQueries):
    """Ending queued jobs nobody will run."""

    def expire_unpicked(self, now: datetime | None = None) -> list[str]:
        """Queued jobs past their deadline end `unavailable`; returns their ids."""
        now = now or utcnow()
        with self.session() as s:
            rows = s.execute(select(Job.id, Job.queue).where(Job.state == JobState.QUEUED, Job.deadline_at < now)).all()
            # Said without guessing why: the workers that serve the queue may all have been busy until the deadline
            # (a job on a queue nobody serves usually ends sooner, by expire_unserved).
            return _unavailable(
                s,
                rows,
                now,
                "no worker picked this job up by its deadline: the workers serving queue {queue} were busy until "
                "then, or none serves it. Give the job a longer deadline (deadline_s, `--deadline`), or ",
                lower=True,
            )

    def expire_unserved(self, served: set[str], older_than: datetime, now: datetime | None = None) -> list[str]:
        """Queued jobs created before `older_than` whose queue no live worker serves end `unavailable`, except those
        submitted to wait for a worker (`wait_for_worker`) and those a stopping worker handed back (it is expected
        back): only their deadline ends them."""
        now = now or utcnow()
        with self.session() as s:
            found = s.execute(
                select(Job.id, Job.queue, Job.request).where(
                    Job.state == JobState.QUEUED,
                    Job.created_at < older_than,
                    Job.queue.not_in(served),
                    Job.handed_back == 0,
                )
            ).all()
            rows = [(job_id, queue) for job_id, queue, request in found if not (request or {}).get("wait_for_worker")]
            return _unavailable(
                s,
                rows,
                now,
                "no worker serves queue {queue} (no live worker answered for it when asked at "
                f"{now:%H:%M:%S} UTC, and the job had waited since {older_than:%H:%M:%S} or earlier). ",
            )


    def expire_unserved_now(self, job_id: str, served: set[str], now: datetime | None = None) -> bool:
        """Job `job_id`, just stored, ends `unavailable` if no live worker serves its queue; True when it did."""
        now = now or utcnow()
        with self.session() as s:
            rows = s.execute(
                select(Job.id, Job.queue).where(
                    Job.id == job_id, Job.state == JobState.QUEUED, Job.queue.not_in(served)
                )
            ).all()
            why = (
                "no worker serves queue {queue} (no live worker serves it now; to wait for one instead, submit "
                "with wait_for_worker, `--wait-for-worker` on the CLI). "
            )
            return bool(_unavailable(s, rows, now, why))


def _unavailable(s: Session, rows: Sequence[Any], now: datetime, why: str, *, lower: bool = False) -> list[str]:
    """End these queued jobs `unavailable`: `why` (with {queue}) and how to serve the queue (its first letter lower
    when `why` runs on into it)."""
    expired = []
    for job_id, queue in rows:
        changed = changed_rows(
            s,
            update(Job)
            .where(Job.id == job_id, Job.state == JobState.QUEUED)
            .values(
                state=JobState.DONE,
                outcome=Outcome.UNAVAILABLE.value,
                message=why.format(queue=queue) + _lowered(_how_to_serve(queue), lower),
                finished_at=now,
            ),
        )
        if changed:
            expired.append(job_id)
    return expired


def _how_to_serve(queue: str) -> str:
    if queue.startswith("gpu."):
        arch = queue.split(".")[1]
        return f"Start `cuprobe worker` on a machine with an {arch} GPU, or submit for an arch that has one."
    return "Start `cuprobe worker` (it always starts a CPU worker)."


def _lowered(text: str, lower: bool) -> str:
    return text[:1].lower() + text[1:] if lower else text
