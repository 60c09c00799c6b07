"""The store's compare-and-set rules on SQLite: one result per job, bounded attempts, deadlines, cancel."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.db.store import ClaimVerdict, JobState, Store, utcnow
from cuprobe.service.models import Outcome, RunResult, Tool
from cuprobe.service.queue.submit import JobSpec, create

DEAD = "nosuchhost-but-local:0"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'c.db'}")
    s.migrate()
    return s


def _job(store: Store, **spec: object) -> str:
    return create(JobSpec.model_validate({"probe": "selftest", **spec}), store, Settings()).id


def _result(outcome: Outcome = Outcome.CLEAN) -> RunResult:
    return RunResult(probe="selftest", tool=Tool.NONE, outcome=outcome, message=outcome.value)


def _claim(store: Store, job_id: str, worker: str = "w:1", max_attempts: int = 3) -> ClaimVerdict:
    return store.claim(job_id, worker, max_attempts=max_attempts, stale_after_s=60, job_dir="/tmp/x").verdict


def test_second_result_for_a_job_is_not_stored(store: Store) -> None:
    job_id = _job(store)
    assert _claim(store, job_id) is ClaimVerdict.RUN
    assert store.finish(job_id, 1, _result(Outcome.FINDINGS)) is True
    assert store.finish(job_id, 1, _result(Outcome.CLEAN)) is False
    assert _claim(store, job_id) is ClaimVerdict.ALREADY_FINISHED
    job = store.get(job_id)
    assert job is not None and (job.state, job.outcome) == (JobState.DONE, "findings")


def test_an_attempt_superseded_by_a_newer_one_cannot_store(store: Store) -> None:
    job_id = _job(store)
    store.claim(job_id, "otherhost:1", max_attempts=3, stale_after_s=60, job_dir="/j")
    # With no heartbeat within stale_after_s, attempt 1 is presumed lost and attempt 2 starts.
    assert store.claim(job_id, "otherhost:2", max_attempts=3, stale_after_s=0, job_dir="/j").attempt == 2
    assert store.finish(job_id, 1, _result()) is False
    assert store.finish(job_id, 2, _result()) is True
    assert [r.attempt for r in store.runs(job_id)] == [1, 2]


def test_duplicate_delivery_while_a_live_attempt_runs_is_skipped(store: Store) -> None:
    job_id = _job(store)
    assert _claim(store, job_id, "otherhost:7") is ClaimVerdict.RUN
    assert _claim(store, job_id, "otherhost:8") is ClaimVerdict.RUNNING_ELSEWHERE


def test_job_lost_with_its_worker_too_often_ends_crashed(store: Store) -> None:
    import socket

    dead_here = f"{socket.gethostname()}:999999999"  # a pid that cannot exist: this host's worker died
    job_id = _job(store)
    for attempt in (1, 2):
        assert (
            store.claim(job_id, dead_here, max_attempts=2, stale_after_s=60, job_dir="/j").attempt == attempt
        )
    assert _claim(store, job_id, "w:3", max_attempts=2) is ClaimVerdict.GIVEN_UP
    job = store.get(job_id)
    assert job is not None and job.outcome == "crashed" and "2 times" in job.message


def test_unpicked_job_past_its_deadline_is_unavailable(store: Store) -> None:
    job_id = _job(store, probe="uninit-read", deadline_s=5)
    assert store.expire_unpicked(utcnow()) == []
    assert store.expire_unpicked(utcnow() + timedelta(seconds=6)) == [job_id]
    job = store.get(job_id)
    assert job is not None and job.outcome == "unavailable" and "gpu.sm90" in job.message
    # Not "nothing is serving": the queue's workers may only have been busy; the message says both, and what to do
    assert job.message.startswith(
        "no worker picked this job up by its deadline: the workers serving queue gpu.sm90 were busy until then, or "
        "none serves it. Give the job a longer deadline (deadline_s, `--deadline`), or start `cuprobe worker` on a "
    )


def test_cancel_queued_then_running(store: Store) -> None:
    queued = _job(store)
    assert store.cancel(queued) == JobState.CANCELLED
    assert _claim(store, queued) is ClaimVerdict.ALREADY_FINISHED
    running = _job(store)
    _claim(store, running)
    assert store.cancel(running) == JobState.RUNNING
    assert store.heartbeat(running, 1) is True
    assert store.finish(running, 1, _result(), cancelled=True)
    job = store.get(running)
    assert job is not None and (job.state, job.outcome) == (JobState.CANCELLED, None)
    other = _job(store)
    assert {j.id for j in store.jobs(outcome="cancelled")} == {queued, running}  # `cancelled`, as the docs list it
    assert other not in {j.id for j in store.jobs(state="cancelled")}


def test_since_and_before_with_another_utc_offset_bound_the_same_moment(store: Store) -> None:
    """A bound written with an offset (`?since=...-05:00`) means that moment, not that wall-clock time in UTC."""
    job_id = _job(store)
    job = store.get(job_id)
    assert job is not None
    created = job.created_at.replace(tzinfo=job.created_at.tzinfo or UTC)
    west, east = timezone(timedelta(hours=-5)), timezone(timedelta(hours=5))
    assert store.jobs(since=(created + timedelta(hours=1)).astimezone(west)) == []
    assert store.jobs(before=(created - timedelta(hours=1)).astimezone(east)) == []
    hour = timedelta(hours=1)
    found = store.jobs(since=(created - hour).astimezone(west), before=(created + hour).astimezone(east))
    assert [j.id for j in found] == [job_id]
    assert [j.id for j in store.jobs(since=(created - timedelta(minutes=1)).replace(tzinfo=None))] == [job_id]
