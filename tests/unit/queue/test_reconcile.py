"""Reconciling the store with what Redis holds: resend what it lost, leave what it has, expire deadlines."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Job, Store, utcnow
from cuprobe.service.queue.reconcile import reconcile
from cuprobe.service.queue.submit import JobSpec, create

SETTINGS = Settings(requeue_grace_s=10, stale_after_s=30)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'c.db'}")
    s.migrate()
    return s


def test_queued_job_redis_lost_is_resent_once_past_the_grace(store: Store) -> None:
    lost = create(JobSpec(probe="selftest"), store, SETTINGS).id
    held = create(JobSpec(probe="selftest"), store, SETTINGS).id
    sent: list[str] = []

    def run(at_s: float) -> list[str]:
        report = reconcile(
            store,
            SETTINGS,
            broker_ids=lambda queues: {held: "waiting"},
            enqueue=lambda job: sent.append(job.id),
            now=utcnow() + timedelta(seconds=at_s),
        )
        return report.resent

    assert run(0) == []
    assert run(11) == [lost]
    assert sent == [lost]
    job = store.get(lost)
    assert job is not None and job.enqueues == 1


def test_unreadable_broker_only_applies_deadlines(store: Store) -> None:
    job_id = create(JobSpec(probe="uninit-read", deadline_s=1), store, SETTINGS).id

    def down(queues: set[str]) -> dict[str, str]:
        raise ConnectionError("redis down")

    report = reconcile(
        store, SETTINGS, broker_ids=down, enqueue=lambda job: None, now=utcnow() + timedelta(seconds=60)
    )
    assert report.expired == [job_id] and report.resent == []


def test_running_job_gone_silent_is_resent_unless_a_copy_waits(store: Store) -> None:
    job_id = create(JobSpec(probe="selftest"), store, SETTINGS).id
    store.claim(job_id, "otherhost:1", max_attempts=3, stale_after_s=30, job_dir="/j")
    sent: list[Job] = []
    later = utcnow() + timedelta(seconds=31)
    waiting = reconcile(
        store, SETTINGS, broker_ids=lambda q: {job_id: "waiting"}, enqueue=sent.append, now=later
    )
    assert waiting.resent == []  # already redelivered and waiting for a worker: no pile of copies
    report = reconcile(
        store, SETTINGS, broker_ids=lambda q: {job_id: "unacked"}, enqueue=sent.append, now=later
    )
    assert report.resent == [job_id] and [j.id for j in sent] == [job_id]


def test_queued_job_on_a_queue_no_worker_serves_ends_unavailable_after_the_grace(store: Store) -> None:
    settings = Settings(requeue_grace_s=10, stale_after_s=30, unserved_after_s=60)
    gpu = create(JobSpec(probe="uninit-read"), store, settings).id  # queue gpu.sm90, deadline an hour away
    cpu = create(JobSpec(probe="selftest"), store, settings).id
    asked: list[int] = []

    def served() -> set[str]:
        asked.append(1)
        return {"cpu", "cpu.sweep"}

    def run(at_s: float, answer: object = served) -> list[str]:
        return reconcile(
            store,
            settings,
            broker_ids=lambda queues: {gpu: "waiting", cpu: "waiting"},
            enqueue=lambda job: None,
            served_queues=answer,  # type: ignore[arg-type]
            now=utcnow() + timedelta(seconds=at_s),
        ).expired

    assert run(30) == [] and asked == []  # nothing has waited long enough: the workers are not even asked
    assert run(61, lambda: None) == []  # the workers could not be asked: only the deadline applies
    assert run(61) == [gpu]
    job = store.get(gpu)
    assert job is not None and job.outcome == "unavailable"
    assert "no worker serves queue gpu.sm90" in job.message and "cuprobe worker" in job.message
    still = store.get(cpu)
    assert still is not None and still.state == "queued"


def test_result_left_on_disk_during_a_store_outage_is_stored_by_the_reconciler(store: Store, tmp_path: Path) -> None:
    from cuprobe.service.db.pending import write_pending
    from cuprobe.service.db.store import worker_identity
    from cuprobe.service.models import Outcome, RunResult, Tool

    job_id = create(JobSpec(probe="selftest"), store, SETTINGS).id
    claim = store.claim(job_id, worker_identity(), max_attempts=3, stale_after_s=30, job_dir=str(tmp_path / job_id))
    result = RunResult(probe="selftest", tool=Tool.NONE, outcome=Outcome.CLEAN, message="bare run completed")
    # The worker's retries ran out while the store was down: the result waits in the attempt's directory.
    write_pending(tmp_path / job_id / f"attempt-{claim.attempt}", claim.attempt, result, cancelled=False)
    report = reconcile(store, SETTINGS, broker_ids=None, enqueue=lambda job: None)
    assert report.stored == [job_id]
    job = store.get(job_id)
    assert job is not None and (job.state, job.outcome, job.attempts) == ("done", "clean", 1)
    assert reconcile(store, SETTINGS, broker_ids=None, enqueue=lambda job: None).stored == []  # stored once


def test_running_job_whose_worker_left_the_registry_is_requeued(store: Store) -> None:
    from cuprobe.service.db.store import worker_identity

    job_id = create(JobSpec(probe="selftest"), store, SETTINGS).id
    store.claim(job_id, worker_identity(), max_attempts=3, stale_after_s=30, job_dir="/tmp/x")
    sent: list[str] = []

    def run(alive: bool | None, at_s: float) -> list[str]:
        return reconcile(
            store,
            SETTINGS,
            broker_ids=None,
            enqueue=lambda job: sent.append(job.id),
            worker_alive=lambda worker: alive,
            now=utcnow() + timedelta(seconds=at_s),
        ).requeued

    assert run(True, 60) == [] and run(None, 60) == []  # alive, or the registry cannot be read: left alone
    assert run(False, 5) == []  # its heartbeat is fresher than the registry's TTL
    assert run(False, SETTINGS.worker_ttl_s + 1) == [job_id] and sent == [job_id]
    job = store.get(job_id)
    assert job is not None and job.state == "queued" and "stopped heartbeating" in job.message


def test_a_job_asked_to_wait_for_a_worker_waits_until_its_deadline(store: Store) -> None:
    """wait_for_worker: the unserved queue does not end it; its deadline does (the one beside it is the control)."""
    settings = Settings(requeue_grace_s=10, stale_after_s=30, unserved_after_s=60)
    waits = create(JobSpec(probe="uninit-read", wait_for_worker=True, deadline_s=600), store, settings).id
    plain = create(JobSpec(probe="uninit-read"), store, settings).id

    def run(at_s: float) -> list[str]:
        return reconcile(
            store,
            settings,
            broker_ids=lambda queues: {waits: "waiting", plain: "waiting"},
            enqueue=lambda job: None,
            served_queues=lambda: {"cpu"},
            now=utcnow() + timedelta(seconds=at_s),
        ).expired

    assert run(61) == [plain]
    assert run(300) == []
    job = store.get(waits)
    assert job is not None and job.state == "queued"
    assert run(601) == [waits]
    ended = store.get(waits)
    assert ended is not None and ended.outcome == "unavailable" and "deadline" in ended.message


def test_a_job_stored_in_the_start_up_grace_ends_at_the_first_pass_after_it(store: Store) -> None:
    """Submission answers `unavailable` at once only after the API's start-up grace; a job stored within it is not
    kept waiting `unserved_after_s` more once the grace has ended."""
    settings = Settings(requeue_grace_s=10, stale_after_s=30, unserved_after_s=120)
    grace_end = utcnow() + timedelta(seconds=10)
    gpu = create(JobSpec(probe="uninit-read"), store, settings).id

    def run(at_s: float) -> list[str]:
        return reconcile(
            store,
            settings,
            broker_ids=lambda queues: {gpu: "waiting"},
            enqueue=lambda job: None,
            served_queues=lambda: {"cpu"},
            now=utcnow() + timedelta(seconds=at_s),
            grace_end=grace_end,
        ).expired

    assert run(5) == []  # still in the grace: workers may not have been seen yet
    assert run(12) == [gpu]  # not at 120 s


def test_a_handed_back_job_whose_old_delivery_sits_unacked_is_resent(store: Store) -> None:
    """A worker stopped together with its broker hands its job back, but cannot give Redis the message back: it sits
    unacked until the visibility timeout. The job is sent again; a job delivered and not yet claimed is not."""
    handed = create(JobSpec(probe="selftest"), store, SETTINGS).id
    store.claim(handed, "otherhost:1", max_attempts=1, stale_after_s=30, job_dir="/j")
    assert store.hand_back(handed, 1, "handed back", utcnow() + timedelta(hours=1), limit=10)
    delivered = create(JobSpec(probe="selftest"), store, SETTINGS).id
    store.mark_enqueued(delivered)
    sent: list[str] = []
    report = reconcile(
        store,
        SETTINGS,
        broker_ids=lambda queues: {handed: "unacked", delivered: "unacked"},
        enqueue=lambda job: sent.append(job.id),
        now=utcnow() + timedelta(seconds=11),
    )
    assert report.resent == [handed] and sent == [handed]
