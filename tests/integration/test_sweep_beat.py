"""The scheduled sweep against real Redis (once per due time, never twice at once) and a real PostgreSQL store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from cuprobe.service.db.store import Store, utcnow
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models import Outcome
from cuprobe.service.models.sweep import Sweep, SweepCase
from cuprobe.service.queue.registry import WorkerRegistry
from cuprobe.service.sweep.execute import ServiceRunner
from cuprobe.service.sweep.schedule import running_key, start_once
from tests.integration.stack import Stack
from tests.redis_dbs import OwnedDb

DUE = datetime(2026, 12, 3, 2, 0, 17, tzinfo=UTC)


@pytest.fixture
def client(redis_db: OwnedDb) -> redis.Redis:
    return redis_db.client


def _sweep(sweep_id: str) -> Sweep:
    case = SweepCase(
        key="selftest/none/default",
        entry="selftest",
        probe="selftest",
        tool="none",
        process=0,
        batched=False,
        outcome=Outcome.CLEAN,
    )
    return Sweep(id=sweep_id, definition="nightly", state="done", started_at=utcnow(), cases=[case])


def test_a_second_beat_at_the_same_due_time_does_not_start_it_again(client: redis.Redis) -> None:
    ran: list[int] = []
    first = start_once(client, "nightly", DUE, lambda: ran.append(1) or _sweep("a"), lock_ttl_s=60)
    second = start_once(client, "nightly", DUE.replace(second=59), lambda: ran.append(2) or _sweep("b"), lock_ttl_s=60)
    assert first[0] == "ran" and second == ("skipped: another beat already started the sweep due at this time", None)
    assert ran == [1] and client.get(running_key("nightly")) is None  # released when the sweep ended


def test_a_sweep_still_running_is_not_started_twice(client: redis.Redis) -> None:
    ran: list[str] = []

    def long_sweep() -> Sweep:
        # While this one runs, the next day's beat fires.
        ran.append("outer")
        inner = start_once(
            client, "nightly", DUE.replace(day=4), lambda: ran.append("inner") or _sweep("b"), lock_ttl_s=60
        )
        assert inner == ("skipped: the previous sweep of this definition is still running", None)
        return _sweep("a")

    assert start_once(client, "nightly", DUE, long_sweep, lock_ttl_s=60)[0] == "ran"
    assert ran == ["outer"]


def test_sweeps_round_trip_through_postgres(pg_url: str) -> None:
    store = Store(pg_url)
    store.migrate()
    sweeps = SweepStore(store)
    sweeps.start("pg1", "nightly")
    assert sweeps.running("nightly") == ["pg1"]
    sweep = _sweep("pg1")
    sweeps.save(sweep)
    loaded = sweeps.get("pg1")
    assert loaded is not None and loaded.cases == sweep.cases and sweeps.running("nightly") == []


def test_the_scheduled_sweep_runs_its_processes_as_sweep_lane_jobs_on_a_real_worker(
    stack: Stack, tmp_path: Path
) -> None:
    """What beat's task runs: every process a job on `cpu.sweep`, run by the stack's Celery worker, then stored."""
    from cuprobe.service.queue.broker import enqueue
    from cuprobe.service.queue.celery_app import make_celery
    from cuprobe.tasks.sweep import run_and_store

    definition = tmp_path / "lane.toml"
    definition.write_text(
        'name = "lane-test"\n[[entry]]\nprobe = "selftest"\ntool = "none"\n'
        'grid = { behaviour = ["ok", "violate"] }\n'
    )
    celery = make_celery(stack.settings)
    runner = ServiceRunner(stack.store, stack.settings, lambda job: enqueue(celery, job), poll_s=0.2)
    sweep = run_and_store(definition, stack.store, stack.settings, runner)
    outcomes = {case.key.rsplit("/", 1)[-1]: case.outcome for case in sweep.cases}
    assert len(outcomes) == 2 and set(outcomes.values()) == {Outcome.CLEAN, Outcome.FINDINGS}, outcomes
    (violated,) = [c for c in sweep.cases if c.outcome is Outcome.FINDINGS]
    assert [f.signature for f in violated.findings] == ["none|expectation-violation|selftest|violate"]
    jobs = stack.store.jobs(probe="selftest", limit=1000)
    mine = [j for j in jobs if j.lane == "sweep"]
    assert len(mine) >= 2 and {j.queue for j in mine} == {"cpu.sweep"} and all(j.state == "done" for j in mine)
    stored = SweepStore(stack.store).get(sweep.id)
    assert stored is not None and stored.state == "done" and len(stored.cases) == 2
    # Each worker publishes its pool's concurrency, which the scheduled sweep plans its batches by (on a GPU worker,
    # its K: service_slots); the stack's worker runs 2 at once.
    workers = WorkerRegistry(stack.settings).view(max_age_s=0).workers
    assert any(w.slots == 2 and "cpu.sweep" in w.queues for w in workers), workers
