"""Word that a job ended, on real Redis: the worker's announcement wakes the held GETs of that job, and only those."""

from __future__ import annotations

import asyncio
import time

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.queue.ended import EndAnnouncer, EndListener
from tests.redis_dbs import OwnedDb


@pytest.fixture
def settings(redis_db: OwnedDb) -> Settings:
    return Settings(broker_url=redis_db.url)


def test_an_announcement_wakes_the_waiters_of_its_job_only(settings: Settings) -> None:
    listener, announce = EndListener(settings), EndAnnouncer(settings)

    async def scenario() -> tuple[bool, bool, bool]:
        with listener.watch("job-a") as a, listener.watch("job-a") as a_too, listener.watch("job-b") as b:
            assert await asyncio.to_thread(listener.subscribed.wait, 20)
            announce("job-a")
            await asyncio.wait_for(a.wait(), timeout=20)
            await asyncio.wait_for(a_too.wait(), timeout=20)
            await asyncio.sleep(0.2)  # time enough for a stray wake-up of job-b to arrive
            return a.is_set(), a_too.is_set(), b.is_set()

    try:
        assert asyncio.run(scenario()) == (True, True, False)
    finally:
        listener.stop()


def test_announcing_without_redis_is_only_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    announce = EndAnnouncer(Settings(broker_url="redis://127.0.0.1:1/0"))  # nothing listens there
    started = time.monotonic()
    announce("job-a")
    assert time.monotonic() - started < 10
    assert "could not announce that job job-a ended" in caplog.text
