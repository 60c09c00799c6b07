"""The reconcile and sweep locks on real Redis: released after use, and never released by a process that does not own
them (redis-py's Lock: an owner token and a compare-and-delete release)."""

from __future__ import annotations

import logging
import threading

import pytest
import redis

from cuprobe.service.config import Settings
from cuprobe.service.queue.reconciler import LOCK_KEY, locked
from cuprobe.service.sweep.schedule import running_key, start_once
from tests.integration.test_sweep_beat import DUE, _sweep
from tests.redis_dbs import OwnedDb


@pytest.fixture
def client(redis_db: OwnedDb) -> redis.Redis:
    return redis_db.client


@pytest.fixture
def settings(redis_db: OwnedDb) -> Settings:
    return Settings(broker_url=redis_db.url, reconcile_interval_s=10)


def _in_other_process(settings: Settings) -> bool:
    """Whether another reconciler (here: another thread with its own connection) gets the lock right now."""
    got: list[bool] = []

    def other() -> None:
        with locked(settings) as mine:
            got.append(mine)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(30)
    return got[0]


def test_the_reconcile_lock_is_released_after_a_pass_so_the_next_pass_runs_at_once(
    client: redis.Redis, settings: Settings
) -> None:
    with locked(settings) as mine:
        assert mine and client.exists(LOCK_KEY)
        assert not _in_other_process(settings)  # one pass at a time
        assert client.exists(LOCK_KEY)  # the refused process left the holder's lock alone
    assert not client.exists(LOCK_KEY)  # released, not left to expire
    assert _in_other_process(settings)


def test_a_reconcile_lock_that_expired_and_was_retaken_is_not_released_by_its_first_holder(
    client: redis.Redis, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), locked(settings) as mine:
        assert mine
        client.delete(LOCK_KEY)  # as if it expired during a long pass
        other = client.lock(LOCK_KEY, timeout=60)
        assert other.acquire(blocking=False)
    assert client.get(LOCK_KEY) == other.local.token  # the first holder's release left the new owner's lock
    assert "reconcile lock not released" in caplog.text
    other.release()


def test_the_sweep_lock_is_released_after_the_sweep_and_a_retaken_one_is_left_alone(client: redis.Redis) -> None:
    assert start_once(client, "nightly", DUE, lambda: _sweep("a"), lock_ttl_s=60)[0] == "ran"
    assert not client.exists(running_key("nightly"))

    def expires_mid_sweep() -> object:
        client.delete(running_key("nightly"))  # as if it outlived its TTL
        assert thief.acquire(blocking=False)
        return _sweep("b")

    thief = client.lock(running_key("nightly"), timeout=60)
    assert start_once(client, "nightly", DUE.replace(day=4), expires_mid_sweep, lock_ttl_s=60)[0] == "ran"
    assert client.get(running_key("nightly")) == thief.local.token
