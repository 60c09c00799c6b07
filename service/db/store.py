"""The durable store: jobs, runs and findings on SQLite or PostgreSQL, one class over the db modules."""

from __future__ import annotations

from cuprobe.service.db.engine import changed_rows
from cuprobe.service.db.lifecycle import Claim, ClaimVerdict, JobLifecycle, worker_identity
from cuprobe.service.db.tables import Base, FindingRow, Job, JobState, Run, as_utc, utcnow

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
    "changed_rows",
    "utcnow",
    "worker_identity",
]


class Store(JobLifecycle):
    """Jobs, runs and findings: the engine (db.engine), reads (db.jobs) and state changes (db.lifecycle)."""
