"""A job for a queue no live worker serves is stored and answered `unavailable` at once (after the API's start-up
grace), unless the request asks to wait for a worker; which queues are served comes from the live workers."""

from __future__ import annotations

import time

import httpx
import pytest

from cuprobe.service.queue.registry import WorkerRegistry
from cuprobe.service.queue.served import served_reader
from tests.integration.stack import Stack, wait_for


@pytest.fixture(scope="module")
def served_api(sqlite_stack: Stack) -> httpx.Client:
    """An API of the SQLite stack that reads which queues the stack's real workers serve from the worker registry
    (their heartbeats in Redis; no grace)."""
    return sqlite_stack.start_api(served_reader(WorkerRegistry(sqlite_stack.settings)), unserved_grace_s=0.0)


def test_gpu_job_on_a_cpu_only_stack_is_unavailable_at_once(sqlite_stack: Stack, served_api: httpx.Client) -> None:
    start = time.monotonic()
    response = served_api.post("/jobs", json={"probe": "uninit-read"})
    elapsed = time.monotonic() - start
    assert response.status_code == 202, response.text
    job = response.json()
    assert (job["state"], job["outcome"], job["exit_code"]) == ("done", "unavailable", 3)
    assert "no worker serves queue gpu.sm90" in job["message"] and "wait_for_worker" in job["message"]
    assert elapsed < 5, f"took {elapsed:.1f} s"
    stored = sqlite_stack.store.get(job["id"])
    assert stored is not None and stored.outcome == "unavailable"


def test_asking_to_wait_keeps_the_job_queued(served_api: httpx.Client) -> None:
    job = served_api.post("/jobs", json={"probe": "uninit-read", "wait_for_worker": True}).json()
    assert job["state"] == "queued" and job["outcome"] is None
    assert served_api.post(f"/jobs/{job['id']}/cancel").json()["state"] == "cancelled"


def test_a_served_queue_runs_as_before(served_api: httpx.Client) -> None:
    job = served_api.post("/jobs", json={"probe": "selftest"}).json()
    assert wait_for(served_api, job["id"])["outcome"] == "clean"


def test_within_the_start_up_grace_nothing_is_refused(sqlite_stack: Stack) -> None:
    api = sqlite_stack.start_api(lambda: {"cpu"}, unserved_grace_s=60.0)
    job = api.post("/jobs", json={"probe": "uninit-read"}).json()
    assert job["state"] == "queued"
    api.post(f"/jobs/{job['id']}/cancel")
