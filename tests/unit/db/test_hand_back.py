"""A stopping worker hands its running job back: queued again, uncounted, at most max_hand_backs times."""

from __future__ import annotations

import socket
from datetime import timedelta
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.db.store import ClaimVerdict, JobState, Store, utcnow
from cuprobe.service.queue.submit import JobSpec, create

DEAD_HERE = f"{socket.gethostname()}:999999999"  # a pid that cannot exist: a worker of this host that died


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'c.db'}")
    s.migrate()
    return s


def _claim(store: Store, job_id: str, max_attempts: int = 1) -> ClaimVerdict:
    return store.claim(job_id, DEAD_HERE, max_attempts=max_attempts, stale_after_s=60, job_dir="/j").verdict


def _hand_back(store: Store, job_id: str, attempt: int, limit: int = 10) -> bool:
    return store.hand_back(job_id, attempt, "handed back", utcnow() + timedelta(hours=1), limit=limit)


def test_a_handed_back_attempt_is_not_counted_and_its_run_holds_no_result(store: Store) -> None:
    job_id = create(JobSpec(probe="selftest"), store, Settings()).id
    assert _claim(store, job_id) is ClaimVerdict.RUN
    assert _hand_back(store, job_id, 1)
    job = store.get(job_id)
    assert job is not None
    assert (job.state, job.attempts, job.handed_back, job.enqueued_at) == (JobState.QUEUED, 1, 1, None)
    # max_attempts is 1 and one attempt ran: it runs again all the same, as attempt 2.
    assert _claim(store, job_id) is ClaimVerdict.RUN
    first, second = store.runs(job_id)
    assert (first.attempt, first.handed_back, first.outcome) == (1, True, None) and first.finished_at is not None
    assert (second.attempt, second.handed_back, second.finished_at) == (2, False, None)
    assert not _hand_back(store, job_id, 1)  # an attempt that is no longer the job's own hands nothing back


def test_past_max_hand_backs_a_stop_counts_as_a_lost_worker(store: Store) -> None:
    job_id = create(JobSpec(probe="selftest"), store, Settings()).id
    for attempt in (1, 2):
        assert _claim(store, job_id) is ClaimVerdict.RUN
        assert _hand_back(store, job_id, attempt, limit=2)
    assert _claim(store, job_id) is ClaimVerdict.RUN
    assert not _hand_back(store, job_id, 3, limit=2)  # left running: its dead worker's attempt counts
    assert _claim(store, job_id) is ClaimVerdict.GIVEN_UP
    job = store.get(job_id)
    assert job is not None and (job.outcome, job.attempts, job.handed_back) == ("crashed", 3, 2)
    assert "lost with its worker 1 times" in job.message
    assert all(run.finished_at is not None for run in store.runs(job_id))  # the dead attempt's run is closed too


def test_a_handed_back_job_waits_for_its_worker_until_its_deadline(store: Store) -> None:
    """Its worker was stopped and is expected back: the unserved-queue rule leaves it, its deadline still ends it."""
    handed = create(JobSpec(probe="selftest"), store, Settings()).id
    assert _claim(store, handed) is ClaimVerdict.RUN
    assert _hand_back(store, handed, 1)
    never_ran = create(JobSpec(probe="selftest"), store, Settings()).id
    later = utcnow() + timedelta(seconds=5)
    assert store.expire_unserved(set(), older_than=later, now=later) == [never_ran]
    assert store.expire_unpicked(utcnow() + timedelta(hours=2)) == [handed]
