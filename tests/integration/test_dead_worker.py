"""A worker that dies leaves no job `running`: the reconciler re-queues it from the worker registry, /health says
not ok while nobody serves the queue, and a worker started later runs it."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from tests.integration.conftest import Figures
from tests.integration.stack import Stack, fresh_stack, wait_for, wait_running

WORKER_TTL_S = 3


@pytest.fixture
def short_ttl_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with fresh_stack(
        tmp_path_factory,
        "deadworker",
        CUPROBE_WORKER_BEAT_S=str(WORKER_TTL_S / 6),  # a worker is gone after six beats
        CUPROBE_REGISTRY_REFRESH_S="0.5",
        # The old rule (heartbeat stale for a minute) must not be what moves the job.
        CUPROBE_STALE_AFTER_S="60",
    ) as stack:
        stack.start_worker(concurrency=1)
        yield stack


def test_dead_worker_job_is_requeued_within_60_s_and_health_is_not_ok(
    short_ttl_stack: Stack, figures: Figures
) -> None:
    stack = short_ttl_stack
    api = stack.start_api()
    job = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "sleep", "seconds": 3}}).json()
    wait_running(api, job["id"])
    assert stack.worker is not None
    for pid in [stack.worker.pid, *stack.pool_children()]:  # the host dies: nothing acks or rejects
        os.kill(pid, signal.SIGKILL)
    stack.worker.wait()
    killed = time.monotonic()
    while (found := api.get(f"/jobs/{job['id']}").json())["state"] == "running":
        assert time.monotonic() - killed < 60, f"still running 60 s after its worker died: {found}"
        time.sleep(0.2)
    requeued_after = time.monotonic() - killed
    assert found["state"] == "queued", found
    assert "stopped heartbeating" in found["message"] and found["worker"] in found["message"]
    health = api.get("/health")
    assert health.status_code == 503 and health.json()["unserved_queues"] == ["cpu"]
    stack.start_worker(concurrency=1)
    done = wait_for(api, job["id"], timeout=60)
    assert (done["outcome"], done["attempts"]) == ("clean", 2), done
    runs = stack.store.runs(job["id"])
    assert [r.outcome for r in runs] == [None, "clean"] and runs[0].finished_at is not None
    deadline = time.monotonic() + 10
    while api.get("/health").status_code != 200:
        assert time.monotonic() < deadline, api.get("/health").json()
        time.sleep(0.3)
    figures.record("dead worker", requeued_after_s=f"{requeued_after:.1f}", worker_ttl_s=WORKER_TTL_S)
