"""A burst of /health calls against a real stack answers at once and leaves the API able to send jobs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.integration.stack import Stack, fresh_stack, wait_for

TOKEN = "health-burst-token"
CALLS = 50


@pytest.fixture(scope="module")
def burst_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with fresh_stack(tmp_path_factory, "burst", CUPROBE_API_TOKEN=TOKEN) as stack:
        stack.start_worker(concurrency=1)
        yield stack


def test_fifty_concurrent_health_calls_answer_within_2_s_and_a_submit_after_is_sent(burst_stack: Stack) -> None:
    api = burst_stack.start_api()
    base = str(api.base_url)
    # One pool of 50 connections, made before the burst: the clock measures the API, not client set-up.
    shared = httpx.Client(base_url=base, timeout=20, limits=httpx.Limits(max_connections=CALLS))
    start_together = threading.Barrier(CALLS)

    def call(_: int) -> tuple[float, int, dict[str, object]]:
        start_together.wait()
        started = time.monotonic()
        response = shared.get("/health")
        return time.monotonic() - started, response.status_code, response.json()

    with ThreadPoolExecutor(CALLS) as pool:
        answers = list(pool.map(call, range(CALLS)))
    slowest = max(seconds for seconds, _, _ in answers)
    assert slowest < 2.0, f"slowest /health took {slowest:.2f} s"
    assert {status for _, status, _ in answers} == {200}
    # Without the token: ok or not, nothing else (no hosts, ports, driver errors or worker names).
    assert {tuple(sorted(body)) for _, _, body in answers} == {("ok", "schema_version")}
    submitted = time.monotonic()
    response = api.post("/jobs", json={"probe": "selftest"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 202 and time.monotonic() - submitted < 2.0, response.text
    job = response.json()
    stored = burst_stack.store.get(job["id"])
    assert stored is not None and stored.enqueues == 1  # the submit itself reached the broker
    authed = httpx.Client(base_url=base, timeout=20, headers={"Authorization": f"Bearer {TOKEN}"})
    assert wait_for(authed, job["id"], timeout=30)["outcome"] == "clean"
    details = authed.get("/health").json()
    assert details["ok"] and details["redis"] == "ok" and details["store"] == "ok"
    (worker,) = details["registry"]
    assert worker["queues"] == ["cpu", "cpu.sweep"] and worker["pid"] in worker["pids"]


def test_health_is_bounded_and_says_not_ok_when_redis_is_gone(tmp_path: Path) -> None:
    """A broker nobody answers on: /health answers 503 within its bound, and the body still says only ok."""
    stack = Stack(
        "noredis", broker_url="redis://127.0.0.1:1/0", database_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
        data_dir=tmp_path, CUPROBE_API_TOKEN=TOKEN,
    )
    api = stack.start_api()
    try:
        started = time.monotonic()
        response = api.get("/health")
        assert time.monotonic() - started < 2.0
        assert response.status_code == 503 and response.json() == {"schema_version": 1, "ok": False}
        detailed = api.get("/health", headers={"Authorization": f"Bearer {TOKEN}"}).json()
        assert detailed["redis"].startswith("unreachable") and detailed["store"] == "ok"
    finally:
        stack.stop()
