"""Failure injection on a real worker: SIGKILL of pool child and probe, repeated worker deaths, timeout."""

from __future__ import annotations

import os
import signal
import time

import httpx
import pytest

from tests.integration.conftest import Figures
from tests.integration.stack import Stack, children, fresh_stack, still_running, wait_for, wait_running
from tests.processes import processes_mentioning


@pytest.fixture(scope="module")
def pg_api(postgres_stack: Stack) -> httpx.Client:
    if not hasattr(postgres_stack, "api_client"):
        postgres_stack.api_client = postgres_stack.start_api()  # type: ignore[attr-defined]
    client: httpx.Client = postgres_stack.api_client  # type: ignore[attr-defined]
    return client


def _pid_of(job: dict) -> int:
    assert job["worker"], job
    return int(job["worker"].rpartition(":")[2])


def _submit(api: httpx.Client, **spec: object) -> dict:
    response = api.post("/jobs", json=spec)
    assert response.status_code == 202, response.text
    return response.json()


def test_sigkill_of_pool_child_reruns_the_job_once(
    postgres_stack: Stack, pg_api: httpx.Client, figures: Figures
) -> None:
    job = _submit(pg_api, probe="selftest", params={"behaviour": "sleep", "seconds": 2})
    running = wait_running(pg_api, job["id"])
    pool_pid = _pid_of(running)
    assert pool_pid in postgres_stack.pool_children()
    deadline = time.monotonic() + 10
    while not (probe_pids := children(pool_pid)):
        assert time.monotonic() < deadline, "probe subprocess never appeared"
        time.sleep(0.05)
    killed = time.monotonic()
    os.kill(pool_pid, signal.SIGKILL)
    done = wait_for(pg_api, job["id"], timeout=60)
    elapsed = time.monotonic() - killed
    runs = postgres_stack.store.runs(job["id"])
    assert (done["outcome"], done["attempts"], len(runs)) == ("clean", 2, 2)
    assert [r.outcome for r in runs] == [None, "clean"]  # the killed attempt stored nothing
    orphans = still_running(probe_pids)  # killed with the pool child (PR_SET_PDEATHSIG), reaped or a zombie
    figures.record(
        "pool child SIGKILL mid-job",
        outcome=done["outcome"],
        attempts=done["attempts"],
        results_stored=sum(r.outcome is not None for r in runs),
        kill_to_outcome_s=f"{elapsed:.2f}",
        orphaned_probes=len(orphans),
    )
    assert orphans == []


def test_sigkill_of_probe_subprocess_is_crashed(postgres_stack: Stack, pg_api: httpx.Client, figures: Figures) -> None:
    job = _submit(pg_api, probe="selftest", params={"behaviour": "sleep", "seconds": 30})
    running = wait_running(pg_api, job["id"])
    deadline = time.monotonic() + 10
    while not (probes := children(_pid_of(running))):
        assert time.monotonic() < deadline, "probe subprocess never appeared"
        time.sleep(0.05)
    killed = time.monotonic()
    os.kill(probes[0], signal.SIGKILL)
    done = wait_for(pg_api, job["id"], timeout=30)
    elapsed = time.monotonic() - killed
    assert (done["outcome"], done["exit_code"], done["attempts"]) == ("crashed", 3, 1)
    assert "SIGKILL" in done["message"]
    assert len(postgres_stack.store.runs(job["id"])) == 1
    figures.record(
        "probe subprocess SIGKILL",
        outcome=done["outcome"],
        attempts=done["attempts"],
        kill_to_outcome_s=f"{elapsed:.2f}",
        message=repr(done["message"]),
    )


def test_job_that_keeps_killing_its_worker_ends_crashed(
    postgres_stack: Stack, pg_api: httpx.Client, figures: Figures
) -> None:
    max_attempts = postgres_stack.settings.max_attempts
    job = _submit(pg_api, probe="selftest", params={"behaviour": "sleep", "seconds": 30})
    start = time.monotonic()
    for attempt in range(1, max_attempts + 1):
        running = wait_running(pg_api, job["id"], attempt=attempt)
        os.kill(_pid_of(running), signal.SIGKILL)
    done = wait_for(pg_api, job["id"], timeout=60)
    assert (done["outcome"], done["attempts"]) == ("crashed", max_attempts)
    assert f"lost with its worker {max_attempts} times" in done["message"]
    figures.record(
        "job killing its worker repeatedly",
        max_attempts=max_attempts,
        outcome=done["outcome"],
        attempts=done["attempts"],
        seconds_to_give_up=f"{time.monotonic() - start:.2f}",
    )


def test_hanging_probe_ends_timeout(pg_api: httpx.Client, figures: Figures) -> None:
    job = _submit(pg_api, probe="selftest", params={"behaviour": "hang"}, timeout_s=1.5)
    done = wait_for(pg_api, job["id"], timeout=30)
    assert done["outcome"] == "timeout" and done["exit_code"] == 3
    figures.record("hanging probe", outcome=done["outcome"], duration_s=done["result"]["duration_s"])


def test_whole_worker_killed_job_finishes_on_a_new_worker(
    postgres_stack: Stack, pg_api: httpx.Client, figures: Figures
) -> None:
    job = _submit(pg_api, probe="selftest", params={"behaviour": "sleep", "seconds": 3})
    running = wait_running(pg_api, job["id"])
    assert postgres_stack.worker is not None
    doomed = [postgres_stack.worker.pid, *postgres_stack.pool_children()]
    for pid in doomed:  # the host or container dies: main process and pool at once, nothing requeues
        os.kill(pid, signal.SIGKILL)
    postgres_stack.worker.wait()
    killed = time.monotonic()
    postgres_stack.start_worker()
    # Redis keeps the message unacked until the visibility timeout; the reconciler resends it once the
    # heartbeat is stale, and the new worker's claim sees the dead attempt and runs attempt 2.
    done = wait_for(pg_api, job["id"], timeout=60)
    elapsed = time.monotonic() - killed
    assert (done["outcome"], done["attempts"]) == ("clean", 2), done
    assert _pid_of(done) != _pid_of(running)
    assert sum(r.outcome is not None for r in postgres_stack.store.runs(job["id"])) == 1
    settings = postgres_stack.settings
    figures.record(
        "whole worker SIGKILLed, new worker started",
        outcome=done["outcome"],
        attempts=done["attempts"],
        kill_to_outcome_s=f"{elapsed:.2f}",
        stale_after_s=settings.stale_after_s,
        visibility_timeout_s=settings.visibility_timeout_s,
    )


def test_soft_time_limit_stops_the_probe_and_stores_timeout(
    tmp_path_factory: pytest.TempPathFactory, figures: Figures
) -> None:
    """A worker whose probe limit (60 s) is above its soft limit (3 s), a misconfiguration the API would refuse for
    its own settings: the soft limit still stops the probe and the job ends `timeout`, once."""
    with fresh_stack(
        tmp_path_factory,
        "soft",
        CUPROBE_TASK_SOFT_TIME_LIMIT_S="3",
        CUPROBE_TIMEOUT_S="60",
    ) as stack:
        stack.start_worker(concurrency=1)
        api = stack.start_api(timeout_s=1.0)  # the API accepts the job; the worker applies its own 60 s
        job = _submit(api, probe="selftest", params={"behaviour": "hang"})
        start = time.monotonic()
        wait_running(api, job["id"])
        while not processes_mentioning(job["id"]):  # the probe subprocess is up (its --out names the job)
            assert time.monotonic() - start < 10, "the probe never started"
            time.sleep(0.1)
        done = wait_for(api, job["id"], timeout=40)
        elapsed = time.monotonic() - start
        assert done["outcome"] == "timeout" and done["exit_code"] == 3, done
        assert "soft time limit (3.0 s)" in done["message"] and done["attempts"] == 1
        assert elapsed < 15  # the soft limit, not the probe's 60 s, ended it
        time.sleep(1)
        assert processes_mentioning(job["id"]) == []  # the hanging probe's process group was killed
        figures.record("soft time limit", outcome=done["outcome"], seconds_to_outcome=f"{elapsed:.2f}")
