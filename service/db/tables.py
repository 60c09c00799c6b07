"""The store's tables (SQLAlchemy 2 ORM): jobs, runs (one per attempt), findings, and sweeps with their cases."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy import false as sa_false
from sqlalchemy.engine.default import DefaultExecutionContext
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from cuprobe.service.models import signature_key


def utcnow() -> datetime:
    return datetime.now(UTC)


def _key_of_signature(context: DefaultExecutionContext) -> str:
    """The row's signature_key, from the signature it is inserted with."""
    parameters: dict[str, Any] = context.get_current_parameters()  # type: ignore[no-untyped-call]
    return signature_key(parameters["signature"])


class JobState(StrEnum):
    """Where a job is; `done` jobs carry an Outcome, `cancelled` ones do not."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in (JobState.DONE, JobState.CANCELLED)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: DateTime(timezone=True), dict[str, Any]: JSON}


class Job(Base):
    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    probe: Mapped[str] = mapped_column(String(100), index=True)
    tool: Mapped[str] = mapped_column(String(20))
    request: Mapped[dict[str, Any]]
    queue: Mapped[str] = mapped_column(String(100))
    lane: Mapped[str] = mapped_column(String(20))
    state: Mapped[str] = mapped_column(String(20), index=True)
    outcome: Mapped[str | None] = mapped_column(String(20), index=True)
    message: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(index=True)
    deadline_at: Mapped[datetime]
    enqueued_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    heartbeat_at: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # Attempts handed back when their worker stopped gracefully (service/worker/stopping.py): not counted in
    # max_attempts.
    handed_back: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    enqueues: Mapped[int] = mapped_column(Integer, default=0)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    worker: Mapped[str | None] = mapped_column(String(200))
    result: Mapped[dict[str, Any] | None]
    # Groups the jobs of one gate run (`gate:SUITE:RUN`); none for a job submitted alone.
    label: Mapped[str | None] = mapped_column(String(200), index=True)

    @property
    def counted_attempts(self) -> int:
        """Attempts that count against max_attempts: those started, less those handed back by a stopping worker."""
        return self.attempts - (self.handed_back or 0)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("job_id", "attempt"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int]
    worker: Mapped[str] = mapped_column(String(200))
    workdir: Mapped[str] = mapped_column(Text)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    outcome: Mapped[str | None] = mapped_column(String(20))
    # Stopped by its worker's graceful stop and handed back: no result, and not counted in max_attempts.
    handed_back: Mapped[bool] = mapped_column(Boolean, default=False, server_default=sa_false())


class FindingRow(Base):
    __tablename__ = "findings"
    # One row per distinct defect and case of a job (a batched run reports one signature in many cases):
    # a second result for the same job cannot add rows.
    __table_args__ = (UniqueConstraint("job_id", "signature", "case_id", name="uq_findings_job_signature_case"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    signature: Mapped[str] = mapped_column(String(500))  # at most SIGNATURE_MAX (400) characters
    # signature_key(signature): a finding's name in links, indexed for its history across jobs and sweeps.
    signature_key: Mapped[str] = mapped_column(String(16), index=True, default=_key_of_signature)
    tool: Mapped[str] = mapped_column(String(20))
    kind: Mapped[str] = mapped_column(String(100))
    # The case the finding was attributed to; "" when it belongs to no single case.
    case_id: Mapped[str] = mapped_column(String(500), default="", server_default="")
    count: Mapped[int]
    finding: Mapped[dict[str, Any]]


def as_utc(moment: datetime) -> datetime:
    """SQLite returns naive datetimes: read them as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def in_utc(moment: datetime) -> datetime:
    """`moment` in UTC: one with another offset converted, a naive one read as UTC (as the store writes them). A moment
    whose UTC time lies past the calendar's ends (year 1 at +14:00, year 9999 at -14:00) is the end it passed."""
    try:
        return as_utc(moment).astimezone(UTC)
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC) if moment.year == 1 else datetime.max.replace(tzinfo=UTC)


class SweepRow(Base):
    """One run of a sweep definition; its processes and environment live in `summary`."""

    __tablename__ = "sweeps"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    definition: Mapped[str] = mapped_column(String(100), index=True)
    state: Mapped[str] = mapped_column(String(20), index=True)
    started_at: Mapped[datetime] = mapped_column(index=True)
    finished_at: Mapped[datetime | None]
    sanitizer_version: Mapped[str | None] = mapped_column(String(50))
    driver: Mapped[str | None] = mapped_column(String(50))
    summary: Mapped[dict[str, Any]]
    # When the running sweep's process last wrote that it runs (SweepStore.beating); how another host tells a
    # sweep whose process went with its host from a live one (owner.gone).
    beat_at: Mapped[datetime | None]


class SweepCaseRow(Base):
    __tablename__ = "sweep_cases"
    __table_args__ = (UniqueConstraint("sweep_id", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sweep_id: Mapped[str] = mapped_column(ForeignKey("sweeps.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(300))
    probe: Mapped[str] = mapped_column(String(100))
    tool: Mapped[str] = mapped_column(String(20))
    outcome: Mapped[str] = mapped_column(String(20))
    flaky: Mapped[bool] = mapped_column(Boolean, default=False)
    case: Mapped[dict[str, Any]]


class SweepFindingRow(Base):
    __tablename__ = "sweep_findings"
    # One row per defect per case: diffs across sweeps key on (signature, case).
    __table_args__ = (UniqueConstraint("sweep_id", "case_key", "signature"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    sweep_id: Mapped[str] = mapped_column(ForeignKey("sweeps.id", ondelete="CASCADE"), index=True)
    case_key: Mapped[str] = mapped_column(String(300))
    signature: Mapped[str] = mapped_column(String(500))
    signature_key: Mapped[str] = mapped_column(String(16), index=True, default=_key_of_signature)
    count: Mapped[int]
    seen: Mapped[str | None] = mapped_column(String(20))
    finding: Mapped[dict[str, Any]]
