"""Reconciling the store with the broker: deadlines, jobs Redis lost, attempts that died with their worker."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.db.pending import clear_pending, read_pending
from cuprobe.service.db.store import Job, JobState, Store, as_utc, utcnow

log = logging.getLogger(__name__)


@dataclass
class ReconcileReport:
    """What one pass changed."""

    expired: list[str] = field(default_factory=list)
    resent: list[str] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)
    # Results a worker could not store (store outage) that this pass stored from the attempt's directory.
    stored: list[str] = field(default_factory=list)
    # Running jobs whose worker's registry heartbeat is gone, put back in their queue.
    requeued: list[str] = field(default_factory=list)


def reconcile(
    store: Store,
    settings: Settings,
    *,
    broker_ids: Callable[[set[str]], dict[str, str]] | None,
    enqueue: Callable[[Job], object],
    served_queues: Callable[[], set[str] | None] | None = None,
    worker_alive: Callable[[str | None], bool | None] | None = None,
    now: datetime | None = None,
    grace_end: datetime | None = None,
) -> ReconcileReport:
    """One pass: expire unpicked jobs past their deadline; resend jobs Redis no longer holds.

    `broker_ids(queues)` maps each job id Redis holds to `waiting` (in a queue) or `unacked` (delivered);
    None when the broker cannot be read, in which case only deadlines are applied. A running job whose
    heartbeat stopped is resent even when its message sits unacked: Redis would only hand it back after
    the visibility timeout, and a duplicate delivery stores nothing (store.claim); so is a queued job handed back
    or re-queued since its last send whose old delivery sits unacked (a worker stopped with the broker).
    `served_queues()` gives the queues live workers serve (None when that cannot be asked): queued jobs older than
    `unserved_after_s` on a queue nobody serves end `unavailable` before their deadline. `worker_alive(worker)`
    says whether a job's worker (host:pid) still heartbeats in the registry (None: cannot tell): a running job
    whose worker is gone is re-queued (or given up after max_attempts). A result an attempt left on disk because
    the store was down is stored first. `grace_end`: when the API's start-up grace ended (submission answers
    `unavailable` at once only after it); the jobs stored before then need not wait `unserved_after_s` more.
    """
    now = now or utcnow()
    report = ReconcileReport(expired=store.expire_unpicked(now))
    report.stored += _store_pending(store)
    if worker_alive is not None:
        _requeue_orphans(store, settings, worker_alive, enqueue, now, report)
    if served_queues is not None:
        report.expired += _expire_unserved(store, settings, served_queues, now, grace_end)
    if broker_ids is None:
        return report
    unfinished = store.unfinished()
    if not unfinished:
        return report
    try:
        held = broker_ids({job.queue for job in unfinished})
    except Exception as exc:  # Redis down: deadlines still apply; resend on a later pass
        log.warning("cannot read the broker: %s", exc)
        return report
    grace = now - timedelta(seconds=settings.requeue_grace_s)
    stale = now - timedelta(seconds=settings.stale_after_s)
    for job in unfinished:
        where = held.get(job.id)
        # A queued job not sent since it was re-queued or handed back (enqueued_at None) whose message sits unacked:
        # that delivery's attempt has ended, and Redis would hand the message back only after its visibility timeout.
        if (
            job.state == JobState.QUEUED
            and (where is None or (where == "unacked" and job.enqueued_at is None))
            and as_utc(job.enqueued_at or job.created_at) < grace
        ):
            _resend(store, job, enqueue, report)
        elif (
            job.state == JobState.RUNNING
            and where != "waiting"
            and (job.heartbeat_at is None or as_utc(job.heartbeat_at) < stale)
            and as_utc(job.enqueued_at or job.created_at) < stale
        ):
            if job.counted_attempts >= settings.max_attempts:
                if store.give_up(job):
                    report.given_up.append(job.id)
            else:
                _resend(store, job, enqueue, report)
    return report


def _store_pending(store: Store) -> list[str]:
    """Store the results running attempts left in their directories when the store was down."""
    stored = []
    for job in store.unfinished():
        if job.state != JobState.RUNNING or not job.attempts:
            continue
        runs = [r for r in store.runs(job.id) if r.attempt == job.attempts]
        pending = read_pending(Path(runs[0].workdir)) if runs else None
        if pending is None or pending.attempt != job.attempts:
            continue
        if store.finish(job.id, pending.attempt, pending.result, cancelled=pending.cancelled):
            log.info("stored job %s's result from %s (its worker could not)", job.id, runs[0].workdir)
            stored.append(job.id)
        clear_pending(Path(runs[0].workdir))
    return stored


def _requeue_orphans(
    store: Store,
    settings: Settings,
    worker_alive: Callable[[str | None], bool | None],
    enqueue: Callable[[Job], object],
    now: datetime,
    report: ReconcileReport,
) -> None:
    """Running jobs whose worker's registry heartbeat expired (and whose own heartbeat is as old): re-queued."""
    gone_since = now - timedelta(seconds=settings.worker_ttl_s)
    for job in store.unfinished():
        if job.state != JobState.RUNNING or as_utc(job.heartbeat_at or job.started_at or job.created_at) > gone_since:
            continue
        if worker_alive(job.worker) is not False:
            continue
        if job.counted_attempts >= settings.max_attempts:
            if store.give_up(job):
                report.given_up.append(job.id)
            continue
        message = (
            f"re-queued: its worker {job.worker} stopped heartbeating (no registry heartbeat for "
            f"{settings.worker_ttl_s:g} s) during attempt {job.attempts} of {settings.max_attempts}"
        )
        deadline = now + timedelta(seconds=settings.unserved_after_s)
        if store.requeue(job.id, job.attempts, message, deadline):
            report.requeued.append(job.id)
            requeued = store.get(job.id)
            if requeued is not None:
                _resend(store, requeued, enqueue, report)


def _expire_unserved(
    store: Store,
    settings: Settings,
    served_queues: Callable[[], set[str] | None],
    now: datetime,
    grace_end: datetime | None = None,
) -> list[str]:
    cutoff = now - timedelta(seconds=settings.unserved_after_s)
    if grace_end is not None and now >= grace_end:
        cutoff = max(cutoff, grace_end)  # stored in the start-up grace, when submission could not answer at once
    if not any(j.state == JobState.QUEUED and as_utc(j.created_at) < cutoff for j in store.unfinished()):
        return []  # ask the workers only when some job has waited long enough to matter
    try:
        served = served_queues()
    except Exception as exc:  # cannot ask: deadlines still apply
        log.warning("cannot ask the workers which queues they serve: %s", exc)
        return []
    return [] if served is None else store.expire_unserved(served, cutoff, now)


def _resend(store: Store, job: Job, enqueue: Callable[[Job], object], report: ReconcileReport) -> None:
    try:
        enqueue(job)
    except Exception as exc:  # broker still down: the next pass tries again
        log.warning("could not resend job %s: %s", job.id, exc, exc_info=True)
        return
    store.mark_enqueued(job.id)
    report.resent.append(job.id)
