"""A finding across time: every job and sweep where its signature appeared, first and last seen, how often."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import func, select

from cuprobe.service.db.store import Store
from cuprobe.service.db.tables import FindingRow, Job, SweepCaseRow, SweepFindingRow, SweepRow, as_utc
from cuprobe.service.models import SCHEMA_VERSION, Finding


class Occurrence(BaseModel):
    """One job or sweep case in which the finding appeared."""

    source: Literal["job", "sweep"]
    id: str = Field(description="the job's or the sweep's id")
    at: datetime = Field(description="when the job was created, or the sweep started")
    name: str = Field(description="the job's probe, or the sweep's definition")
    outcome: str | None = Field(description="the job's outcome, or the sweep case's")
    case: str = Field(description="the case it was attributed to ('' for none)")
    count: int = Field(description="records in that job or case")
    seen: str | None = Field(None, description="k/n over a sweep's repeats")


class Seen(BaseModel):
    """Where a finding appeared in jobs, or in sweeps."""

    rows: int = Field(0, description="(job or sweep, case) pairs holding it")
    distinct: int = Field(0, description="distinct jobs or sweeps")
    records: int = Field(0, description="sanitizer records summed over them")
    first_seen: datetime | None = None
    last_seen: datetime | None = None


class FindingHistory(BaseModel):
    """A signature's history; `finding` is its latest stored occurrence in full."""

    schema_version: int = SCHEMA_VERSION
    key: str = Field(description="signature_key(signature): the finding's name in links")
    signature: str
    finding: Finding
    jobs: Seen
    sweeps: Seen
    first_seen: datetime | None
    last_seen: datetime | None
    occurrences: list[Occurrence] = Field(description="newest first, at most `limit` of them")


def _seen(row: Any) -> Seen:
    rows, distinct, records, first, last = row
    return Seen(
        rows=rows or 0,
        distinct=distinct or 0,
        records=int(records or 0),
        first_seen=as_utc(first) if first else None,
        last_seen=as_utc(last) if last else None,
    )


def finding_history(store: Store, key: str, limit: int = 100) -> FindingHistory | None:
    """The history of the finding named `key`; None when no job or sweep holds it."""
    with store.session() as s:
        in_jobs = _seen(
            s.execute(
                select(
                    func.count(),
                    func.count(func.distinct(FindingRow.job_id)),
                    func.sum(FindingRow.count),
                    func.min(Job.created_at),
                    func.max(Job.created_at),
                )
                .join(Job, Job.id == FindingRow.job_id)
                .where(FindingRow.signature_key == key)
            ).one()
        )
        in_sweeps = _seen(
            s.execute(
                select(
                    func.count(),
                    func.count(func.distinct(SweepFindingRow.sweep_id)),
                    func.sum(SweepFindingRow.count),
                    func.min(SweepRow.started_at),
                    func.max(SweepRow.started_at),
                )
                .join(SweepRow, SweepRow.id == SweepFindingRow.sweep_id)
                .where(SweepFindingRow.signature_key == key)
            ).one()
        )
        if not in_jobs.rows and not in_sweeps.rows:
            return None
        job_rows = s.execute(
            select(FindingRow.id, Job.id, Job.created_at, Job.probe, Job.outcome, FindingRow.case_id, FindingRow.count)
            .join(Job, Job.id == FindingRow.job_id)
            .where(FindingRow.signature_key == key)
            .order_by(Job.created_at.desc())
            .limit(limit)
        ).all()
        sweep_rows = s.execute(
            select(
                SweepFindingRow.id,
                SweepRow.id,
                SweepRow.started_at,
                SweepRow.definition,
                SweepCaseRow.outcome,
                SweepFindingRow.case_key,
                SweepFindingRow.count,
                SweepFindingRow.seen,
            )
            .join(SweepRow, SweepRow.id == SweepFindingRow.sweep_id)
            .outerjoin(
                SweepCaseRow,
                (SweepCaseRow.sweep_id == SweepFindingRow.sweep_id) & (SweepCaseRow.key == SweepFindingRow.case_key),
            )
            .where(SweepFindingRow.signature_key == key)
            .order_by(SweepRow.started_at.desc())
            .limit(limit)
        ).all()
        occurrences = [
            Occurrence(source="job", id=j, at=as_utc(at), name=probe, outcome=outcome, case=case, count=count)
            for _, j, at, probe, outcome, case, count in job_rows
        ] + [
            Occurrence(
                source="sweep", id=w, at=as_utc(at), name=name, outcome=outcome, case=case, count=count, seen=seen
            )
            for _, w, at, name, outcome, case, count, seen in sweep_rows
        ]
        occurrences.sort(key=lambda o: o.at, reverse=True)
        latest = occurrences[0]
        if latest.source == "job":
            row_id = next(r[0] for r in job_rows if r[1] == latest.id)
            stored = s.scalar(select(FindingRow.finding).where(FindingRow.id == row_id))
        else:
            row_id = next(r[0] for r in sweep_rows if r[1] == latest.id)
            stored = s.scalar(select(SweepFindingRow.finding).where(SweepFindingRow.id == row_id))
    finding = Finding.model_validate(stored)
    firsts = [d for d in (in_jobs.first_seen, in_sweeps.first_seen) if d]
    lasts = [d for d in (in_jobs.last_seen, in_sweeps.last_seen) if d]
    return FindingHistory(
        key=key,
        signature=finding.signature,
        finding=finding,
        jobs=in_jobs,
        sweeps=in_sweeps,
        first_seen=min(firsts) if firsts else None,
        last_seen=max(lasts) if lasts else None,
        occurrences=occurrences[:limit],
    )
