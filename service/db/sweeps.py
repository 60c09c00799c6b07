"""Sweeps in the store: start one (state running), save it finished, read it back, find the one before it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, func, or_, select
from sqlalchemy.orm import Session

from cuprobe.service.db.owner import BEAT_S, gone, this_process
from cuprobe.service.db.store import Store
from cuprobe.service.db.tables import SweepCaseRow, SweepFindingRow, SweepRow, as_utc, in_utc, utcnow
from cuprobe.service.models import Outcome
from cuprobe.service.models.sweep import Sweep, SweepCase, SweepSeen, complete

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FindingChange:
    """A sweep finding as a diff reads it."""

    signature: str
    count: int
    seen: str | None
    fallout: bool


@dataclass(frozen=True)
class CaseChange:
    """A sweep case as a diff reads it."""

    key: str
    outcome: Outcome
    flaky: bool
    message: str
    findings: list[FindingChange]
    setup: str | None = None
    truncated: bool = False
    control: bool = False


# How long a scheduled sweep whose process ended waits to be resumed (a CPU worker runs the maintenance pass every
# minute or so) before it is stored as failed instead.
ORPHAN_WAIT = timedelta(hours=24)


@dataclass(frozen=True)
class Adopted:
    """An orphaned sweep this process now owns (SweepStore.adopt): what it needs to carry on."""

    definition: str
    started_at: datetime
    resume: dict[str, Any]  # the definition's path and the slots it was planned for (SweepStore.start)
    why: str  # why its last owner is known to have ended
    times: int  # how many times it has been resumed, this one included


@dataclass(frozen=True)
class SweepChanges:
    """A stored sweep as a diff reads it (SweepStore.for_diff)."""

    id: str
    definition: str
    state: str
    started_at: datetime
    sanitizer_version: str | None
    driver: str | None
    cases: list[CaseChange]


def _lean(s: Session, row: SweepRow, wanted: list[str] | None) -> SweepChanges:
    """The sweep of `row` as a diff reads it, holding only the cases named in `wanted` (all when None)."""
    # A long list is filtered here, not in SQL: PostgreSQL takes at most 65,535 parameters in one statement.
    keys = wanted if wanted is not None and len(wanted) <= 500 else None
    findings: dict[str, list[FindingChange]] = {}
    query = (
        select(
            SweepFindingRow.case_key,
            SweepFindingRow.signature,
            SweepFindingRow.count,
            SweepFindingRow.seen,
            SweepFindingRow.finding["fallout"].as_boolean(),
        )
        .where(SweepFindingRow.sweep_id == row.id)
        .order_by(SweepFindingRow.id)
    )
    if keys is not None:
        query = query.where(SweepFindingRow.case_key.in_(keys))
    for key, signature, count, seen, fallout in s.execute(query):
        findings.setdefault(key, []).append(FindingChange(signature, count, seen, bool(fallout)))
    message, setup = SweepCaseRow.case["message"].as_string(), SweepCaseRow.case["setup"].as_string()
    truncated = SweepCaseRow.case["truncated"].as_boolean()
    control = SweepCaseRow.case["control"].as_boolean()
    cases_query = (
        select(SweepCaseRow.key, SweepCaseRow.outcome, SweepCaseRow.flaky, message, setup, truncated, control)
        .where(SweepCaseRow.sweep_id == row.id)
        .order_by(SweepCaseRow.id)
    )
    if keys is not None:
        cases_query = cases_query.where(SweepCaseRow.key.in_(keys))
    only = set(wanted) if wanted is not None else None
    cases = [
        CaseChange(k, Outcome(o), f, m or "", findings.get(k, []), u, bool(t), bool(c))
        for k, o, f, m, u, t, c in s.execute(cases_query)
        if only is None or k in only
    ]
    return SweepChanges(
        row.id, row.definition, row.state, as_utc(row.started_at), row.sanitizer_version, row.driver, cases
    )


def _started_before(started_at: datetime, sweep_id: str) -> ColumnElement[bool]:
    """Sweeps that started before (`started_at`, `sweep_id`): two sweeps that started at the same time are ordered
    by id, so each has one previous, and the later one sees the earlier."""
    return or_(SweepRow.started_at < started_at, and_(SweepRow.started_at == started_at, SweepRow.id < sweep_id))


class SweepStore:
    """Sweep rows over a Store's engine (same database, same migrations)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def start(self, sweep_id: str, definition: str, resume: dict[str, Any] | None = None) -> None:
        """Store the sweep as running, owned by this process. `resume` (a scheduled sweep's definition path and
        slots): its jobs carry the sweep's label, and if this process ends without finishing it a CPU worker
        resumes it from them (service/sweep/scheduled.py) instead of its reading as failed."""
        with self.store.session() as s:
            summary: dict[str, Any] = {"owner": this_process()} | ({"resume": resume} if resume else {})
            now = utcnow()
            row = SweepRow(id=sweep_id, definition=definition, state="running", started_at=now, summary=summary)
            row.beat_at = now
            s.add(row)

    def beat(self, sweep_id: str) -> bool:
        """Write that this process still runs the sweep; False once it does not own it any more (finished, failed,
        or adopted by another process after this one was judged gone)."""
        with self.store.session() as s:
            row = s.get(SweepRow, sweep_id)
            if row is None or row.state != "running" or not _owned(row.summary.get("owner")):
                return False
            row.beat_at = utcnow()
            return True

    def owns(self, sweep_id: str) -> bool:
        """Whether this process is the sweep's owner: not once another adopted it (SweepStore.adopt) after this
        one was judged gone (a store it could not reach for owner.SILENT)."""
        with self.store.session() as s:
            row = s.get(SweepRow, sweep_id)
            return row is not None and _owned(row.summary.get("owner"))

    @contextmanager
    def beating(self, sweep_id: str, every: float = BEAT_S) -> Iterator[None]:
        """Beat for the sweep every `every` seconds while the block runs (a daemon thread; a store that cannot be
        reached for a while only delays beats), so that another host can tell this live sweep from an orphan."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(every):
                try:
                    if not self.beat(sweep_id):
                        return
                except Exception as exc:  # the store is down or slow: the next beat tries again
                    log.warning("sweep %s: beat not written: %s", sweep_id, exc)

        thread = threading.Thread(target=beat, name=f"sweep-beat-{sweep_id[:8]}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5)

    def reap(self) -> list[str]:
        """Mark failed every running sweep whose process has certainly ended without finishing it (owner.gone);
        returns their ids. Read paths call it, so a killed sweep reads as failed, with why, not as running. A sweep
        that can be resumed stays running, its message saying why it waits (orphans)."""
        reaped = []
        with self.store.session() as s:
            for row in s.scalars(select(SweepRow).where(SweepRow.state == "running")):
                if why := _gone(row):
                    waiting = row.summary.get("orphaned_at") or utcnow().isoformat()
                    if row.summary.get("resume") and utcnow() - datetime.fromisoformat(waiting) < ORPHAN_WAIT:
                        message = f"waiting to be resumed from its jobs by a CPU worker: {why}"
                        if row.summary.get("message") != message:
                            row.summary = {**row.summary, "message": message, "orphaned_at": waiting}
                        continue
                    done = row.summary.get("progress", {}).get("done") if row.summary.get("progress") else None
                    after = f" after {done} finished process(es)" if isinstance(done, int) else ""
                    hours = ORPHAN_WAIT.total_seconds() / 3600
                    unresumed = f"; no CPU worker resumed it within {hours:.0f} h" if row.summary.get("resume") else ""
                    row.state, row.finished_at = "failed", utcnow()
                    row.summary = {**row.summary, "message": f"interrupted: {why}{after}{unresumed}"}
                    reaped.append(row.id)
        return reaped

    def running(self, definition: str) -> list[str]:
        with self.store.session() as s:
            rows = s.scalars(select(SweepRow.id).where(SweepRow.definition == definition, SweepRow.state == "running"))
            return list(rows)

    def progress(self, sweep_id: str, done: int, total: int, last: str) -> None:
        """Record how far a running sweep is: `done` of `total` processes, the last one finished."""
        with self.store.session() as s:
            row = s.get(SweepRow, sweep_id)
            if row is not None and row.state == "running":
                progress = {"done": done, "total": total, "last": last, "at": utcnow().isoformat()}
                row.beat_at = utcnow()
                kept: dict[str, Any] = {k: row.summary[k] for k in ("owner", "resume", "resumed") if k in row.summary}
                row.summary = {**kept, "progress": progress}

    def orphans(self) -> list[str]:
        """Running sweeps that can be resumed (started with `resume`) whose process has certainly ended."""
        with self.store.session() as s:
            rows = s.scalars(select(SweepRow).where(SweepRow.state == "running"))
            return [row.id for row in rows if row.summary.get("resume") and _gone(row)]

    def adopt(self, sweep_id: str) -> Adopted | None:
        """Make this process the owner of an orphaned sweep (orphans); None if it is not one (any more). Callers
        make sure only one process adopts a sweep at a time (scheduled.resume takes a Redis key first)."""
        with self.store.session() as s:
            row = s.get(SweepRow, sweep_id)
            resume = row.summary.get("resume") if row is not None and row.state == "running" else None
            why = _gone(row) if row is not None and resume else None
            if row is None or not isinstance(resume, dict) or why is None:
                return None
            resumed = [*row.summary.get("resumed", []), {"at": utcnow().isoformat(), "why": why}]
            row.summary = {"owner": this_process(), "resume": resume, "resumed": resumed}
            row.beat_at = utcnow()
            return Adopted(row.definition, as_utc(row.started_at), resume, why, len(resumed))

    def fail(self, sweep_id: str, message: str) -> None:
        with self.store.session() as s:
            row = s.get(SweepRow, sweep_id)
            if row is not None:
                row.state, row.finished_at, row.summary = "failed", utcnow(), {"message": message}

    def save(self, sweep: Sweep) -> None:
        """Store a finished sweep (replacing its running row and any earlier cases of the same id)."""
        summary: dict[str, Any] = sweep.model_dump(mode="json", exclude={"cases"})
        with self.store.session() as s:
            row = s.get(SweepRow, sweep.id)
            if row is None:
                started = in_utc(sweep.started_at)  # one instant on SQLite and PostgreSQL alike, whatever its offset
                row = SweepRow(id=sweep.id, definition=sweep.definition, started_at=started, summary={})
                s.add(row)
            row.state, row.finished_at = sweep.state, sweep.finished_at
            row.sanitizer_version, row.driver, row.summary = sweep.sanitizer_version, sweep.driver, summary
            s.execute(delete(SweepFindingRow).where(SweepFindingRow.sweep_id == sweep.id))
            s.execute(delete(SweepCaseRow).where(SweepCaseRow.sweep_id == sweep.id))
            s.flush()
            for case in sweep.cases:
                s.add(
                    SweepCaseRow(
                        sweep_id=sweep.id,
                        key=case.key,
                        probe=case.probe,
                        tool=case.tool.value,
                        outcome=case.outcome.value,
                        flaky=case.flaky,
                        case=case.model_dump(mode="json", exclude={"findings"}),
                    )
                )
                for finding in case.findings:
                    s.add(
                        SweepFindingRow(
                            sweep_id=sweep.id,
                            case_key=case.key,
                            signature=finding.signature,
                            count=finding.count,
                            seen=finding.seen,
                            finding=finding.model_dump(mode="json"),
                        )
                    )

    def get(self, sweep_id: str) -> Sweep | None:
        self.reap()
        with self.store.session() as s:
            row = s.get(SweepRow, sweep_id)
            if row is None:
                return None
            cases = s.scalars(select(SweepCaseRow).where(SweepCaseRow.sweep_id == sweep_id).order_by(SweepCaseRow.id))
            findings: dict[str, list[dict[str, Any]]] = {}
            for f in s.scalars(
                select(SweepFindingRow).where(SweepFindingRow.sweep_id == sweep_id).order_by(SweepFindingRow.id)
            ):
                findings.setdefault(f.case_key, []).append(f.finding)
            loaded = [SweepCase.model_validate({**c.case, "findings": findings.get(c.key, [])}) for c in cases]
            base = {k: v for k, v in row.summary.items() if k not in ("id", "definition", "state", "started_at")}
            return Sweep.model_validate(
                {
                    **base,
                    "id": row.id,
                    "definition": row.definition,
                    "state": row.state,
                    "started_at": as_utc(row.started_at),
                    "finished_at": as_utc(row.finished_at) if row.finished_at else None,
                    "sanitizer_version": row.sanitizer_version,
                    "driver": row.driver,
                    "cases": loaded,
                }
            )

    def for_diff(self, sweep_id: str) -> SweepChanges | None:
        """The sweep holding only what a diff reads, from columns and JSON paths: a diff reads two sweeps, and
        validating the cases' full JSON (frames, observations, evidence) again is most of what `get` costs."""
        self.reap()
        with self.store.session() as s:
            row = s.get(SweepRow, sweep_id)
            return None if row is None else _lean(s, row, None)

    def earlier_runs(self, sweep: SweepSeen, previous: SweepSeen | None) -> dict[str, SweepChanges]:
        """For each case of `sweep` that ran but whose run in `previous` was missing or incomplete (could not run,
        or cut by the record cap): the last finished sweep before `previous` in which that case ran completely,
        holding that case. A diff compares such a case with its last real run, so a finding that could not be
        checked last time is not called new, nor dropped unfixed."""
        if previous is None:
            return {}
        before = {c.key: c for c in previous.cases}
        keys = [c.key for c in sweep.cases if c.outcome.ran and not (c.key in before and complete(before[c.key]))]
        if not keys:
            return {}
        ran = [o.value for o in Outcome if o.ran]
        truncated = SweepCaseRow.case["truncated"].as_boolean()
        last: dict[str, str] = {}
        with self.store.session() as s:
            for chunk in (keys[i : i + 500] for i in range(0, len(keys), 500)):
                rows = s.execute(
                    select(SweepCaseRow.key, SweepRow.id, truncated)
                    .join(SweepRow, SweepRow.id == SweepCaseRow.sweep_id)
                    .where(
                        SweepRow.definition == sweep.definition,
                        SweepRow.state == "done",
                        SweepRow.id.not_in((sweep.id, previous.id)),
                        _started_before(previous.started_at, previous.id),
                        SweepCaseRow.key.in_(chunk),
                        SweepCaseRow.outcome.in_(ran),
                    )
                    .order_by(SweepRow.started_at.desc(), SweepRow.id.desc())
                )
                for key, sweep_id, cut in rows:
                    if not cut:
                        last.setdefault(key, sweep_id)
            wanted: dict[str, list[str]] = {}
            for key, sweep_id in last.items():
                wanted.setdefault(sweep_id, []).append(key)
            found: dict[str, SweepChanges] = {}
            for sweep_id, its_keys in wanted.items():
                row = s.get(SweepRow, sweep_id)
                if row is not None:
                    lean = _lean(s, row, its_keys)
                    found.update((key, lean) for key in its_keys)
            return found

    def row(self, sweep_id: str) -> SweepRow | None:
        """The sweep's own row: state, times, and its summary (progress while running, the message if it failed)."""
        self.reap()
        with self.store.session() as s:
            return s.get(SweepRow, sweep_id)

    def ids_starting(self, prefix: str, limit: int = 10) -> list[str]:
        """Ids of sweeps that start with `prefix` (at most `limit`)."""
        with self.store.session() as s:
            query = select(SweepRow.id).where(SweepRow.id.startswith(prefix, autoescape=True)).limit(limit)
            return list(s.scalars(query))

    def count(self) -> int:
        """How many sweeps are stored, of every definition and state."""
        with self.store.session() as s:
            return int(s.scalar(select(func.count()).select_from(SweepRow)) or 0)

    def list(self, definition: str | None = None, limit: int = 50) -> list[SweepRow]:
        self.reap()
        with self.store.session() as s:
            query = select(SweepRow).order_by(SweepRow.started_at.desc()).limit(limit)
            if definition:
                query = query.where(SweepRow.definition == definition)
            return list(s.scalars(query))

    def previous_id(self, sweep: Sweep | SweepRow | SweepChanges) -> str | None:
        """The id of the latest finished sweep of the same definition that started before `sweep`."""
        with self.store.session() as s:
            return s.scalars(
                select(SweepRow.id)
                .where(
                    SweepRow.definition == sweep.definition,
                    SweepRow.state == "done",
                    SweepRow.id != sweep.id,
                    _started_before(sweep.started_at, sweep.id),
                )
                .order_by(SweepRow.started_at.desc(), SweepRow.id.desc())
                .limit(1)
            ).first()

    def done_count(self, definition: str) -> int:
        """How many finished sweeps `definition` has."""
        with self.store.session() as s:
            query = select(func.count()).where(SweepRow.definition == definition, SweepRow.state == "done")
            return int(s.scalar(query) or 0)

    def previous(self, sweep: Sweep) -> Sweep | None:
        """The latest finished sweep of the same definition that started before `sweep`."""
        found = self.previous_id(sweep)
        return self.get(found) if found else None


def _gone(row: SweepRow) -> str | None:
    """Why the running sweep's process has certainly ended (owner.gone, by its beat where it ran on another host)."""
    return gone(row.summary.get("owner"), as_utc(row.beat_at) if row.beat_at else None)


def _owned(owner: object) -> bool:
    """Whether `owner` (a row's summary["owner"]) is this process."""
    me = this_process()
    return isinstance(owner, dict) and all(owner.get(k) == me[k] for k in ("host", "pid", "boot"))
