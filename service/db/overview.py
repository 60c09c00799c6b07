"""What the store says about now: jobs waiting and running per queue, and the latest gate runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy import case, func, select

from cuprobe.service.db.store import Store
from cuprobe.service.db.tables import Job, JobState, as_utc
from cuprobe.service.models.queues import GATE_LABEL

# The string just past every `gate:` label: a range on the label index instead of a LIKE it may not use.
_PAST_GATE = "gate;"
ACTIVE = (JobState.QUEUED.value, JobState.RUNNING.value)


class QueueLoad(BaseModel):
    """Jobs queued and running on one queue."""

    queue: str
    queued: int = 0
    running: int = 0


class GateRun(BaseModel):
    """The jobs one `cuprobe gate` run submitted (label `gate:SUITE:RUN`), counted by state and outcome."""

    label: str
    suite: str
    run: str
    started_at: datetime
    last_submitted_at: datetime
    jobs: int
    unfinished: int = 0
    outcomes: dict[str, int] = Field(default_factory=dict, description="outcome (or `cancelled`) -> jobs")

    @property
    def not_run(self) -> int:
        """Jobs that ended without running (anything but clean or findings)."""
        return sum(n for outcome, n in self.outcomes.items() if outcome not in ("clean", "findings"))


def queue_loads(store: Store) -> list[QueueLoad]:
    """Every queue holding queued or running jobs, by name."""
    with store.session() as s:
        rows = s.execute(
            select(Job.queue, Job.state, func.count()).where(Job.state.in_(ACTIVE)).group_by(Job.queue, Job.state)
        ).all()
    loads: dict[str, QueueLoad] = {}
    for queue, state, count in rows:
        load = loads.setdefault(queue, QueueLoad(queue=queue))
        if state == JobState.QUEUED:
            load.queued = count
        else:
            load.running = count
    return [loads[q] for q in sorted(loads)]


def active_jobs(store: Store, limit: int = 20) -> Sequence[Job]:
    """Running jobs and the oldest queued ones, oldest first."""
    with store.session() as s:
        return s.scalars(select(Job).where(Job.state.in_(ACTIVE)).order_by(Job.created_at).limit(limit)).all()


def gate_runs(store: Store, limit: int = 5) -> list[GateRun]:
    """The latest gate runs, newest first; not a gate the service refused (every job it had submitted was cancelled
    before it started: nothing of it ran)."""
    gated = (Job.label >= GATE_LABEL) & (Job.label < _PAST_GATE)
    never_ran = (Job.state == JobState.CANCELLED.value) & Job.started_at.is_(None)
    with store.session() as s:
        latest = s.execute(
            select(Job.label, func.min(Job.created_at), func.max(Job.created_at), func.count())
            .where(gated)
            .group_by(Job.label)
            .having(func.sum(case((never_ran, 0), else_=1)) > 0)
            .order_by(func.max(Job.created_at).desc())
            .limit(limit)
        ).all()
        labels = [row[0] for row in latest]
        counts = s.execute(
            select(Job.label, Job.state, Job.outcome, func.count())
            .where(Job.label.in_(labels))
            .group_by(Job.label, Job.state, Job.outcome)
        ).all()
    runs = {}
    for label, first, last, jobs in latest:
        suite, _, run = str(label).removeprefix(GATE_LABEL).rpartition(":")
        runs[label] = GateRun(
            label=label, suite=suite, run=run, started_at=as_utc(first), last_submitted_at=as_utc(last), jobs=jobs
        )
    for label, state, outcome, count in counts:
        run_of = runs[label]
        if state in ACTIVE:
            run_of.unfinished += count
        else:
            name = outcome or state
            run_of.outcomes[name] = run_of.outcomes.get(name, 0) + count
    return [runs[label] for label in labels]
