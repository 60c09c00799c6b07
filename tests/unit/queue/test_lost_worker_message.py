"""A job whose worker keeps dying ends `crashed` with one message, whether a claim or the reconciler notices."""

from __future__ import annotations

import socket
from datetime import timedelta
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.db.store import ClaimVerdict, Store, utcnow
from cuprobe.service.queue.reconcile import reconcile
from cuprobe.service.queue.submit import JobSpec, create

SETTINGS = Settings(max_attempts=3, stale_after_s=30)
DEAD_HERE = f"{socket.gethostname()}:999999999"  # a pid that cannot exist: this host's worker died


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'c.db'}")
    s.migrate()
    return s


def _three_dead_attempts(store: Store) -> str:
    job_id = create(JobSpec(probe="selftest"), store, SETTINGS).id
    for attempt in (1, 2, 3):
        claim = store.claim(job_id, DEAD_HERE, max_attempts=3, stale_after_s=30, job_dir="/j")
        assert claim.attempt == attempt
    return job_id


def _given_up_by_claim(store: Store) -> str:
    job_id = _three_dead_attempts(store)
    claim = store.claim(job_id, "w:4", max_attempts=3, stale_after_s=30, job_dir="/j")
    assert claim.verdict is ClaimVerdict.GIVEN_UP
    job = store.get(job_id)
    assert job is not None and job.outcome == "crashed"
    return job.message


def _given_up_by_reconciler(store: Store) -> str:
    job_id = _three_dead_attempts(store)
    report = reconcile(
        store,
        SETTINGS,
        broker_ids=lambda queues: {job_id: "unacked"},
        enqueue=lambda job: None,
        now=utcnow() + timedelta(seconds=31),
    )
    assert report.given_up == [job_id]
    job = store.get(job_id)
    assert job is not None and job.outcome == "crashed"
    return job.message


def test_claim_and_reconciler_give_up_with_the_same_message(store: Store) -> None:
    by_claim, by_reconciler = _given_up_by_claim(store), _given_up_by_reconciler(store)
    assert by_claim == by_reconciler
    assert "lost with its worker 3 times" in by_claim and "not retried again" in by_claim
