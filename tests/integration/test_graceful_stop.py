"""A worker stopped gracefully while a job runs hands the job back: the job runs again after the restart, and the
stopped attempt does not count against max_attempts (set to 1 here: counted, it would end the job `crashed`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cuprobe.service.db.store import Store
from tests.integration.stack import (
    REPO,
    Stack,
    free_port,
    fresh_stack,
    still_running,
    wait_for,
    wait_running,
    wait_serving,
)
from tests.processes import as_terminal_foreground, processes_mentioning

CLI = [sys.executable, "-m", "tests.cli_app"]


def _probe_started(api: httpx.Client, job_id: str) -> list[int]:
    """Wait until the job runs and its probe process is up (its --out names the job); its pids."""
    wait_running(api, job_id, timeout=120)
    deadline = time.monotonic() + 60
    while not (pids := processes_mentioning(job_id)):
        assert time.monotonic() < deadline, "the probe never started"
        time.sleep(0.1)
    return pids


def _assert_handed_back(store: Store, job_id: str, data: Path) -> None:
    """What the store and the attempt's directory say once the stopped worker has exited."""
    job = store.get(job_id)
    assert job is not None
    assert (job.state, job.attempts, job.handed_back, job.outcome) == ("queued", 1, 1, None), job.message
    assert "handed back" in job.message and "does not count" in job.message
    (run,) = store.runs(job_id)
    assert (run.handed_back, run.outcome) == (True, None) and run.finished_at is not None
    attempt = data / "jobs" / job_id / "attempt-1"
    assert (attempt / "handed-back.txt").exists() and not (attempt / "pending-result.json").exists()


def _assert_ran_again(api: httpx.Client, store: Store, job_id: str) -> None:
    done = wait_for(api, job_id, timeout=240)
    assert (done["outcome"], done["attempts"], done["handed_back"]) == ("clean", 2, 1), done
    assert [(r.attempt, r.handed_back, r.outcome) for r in store.runs(job_id)] == [(1, True, None), (2, False, "clean")]


def _up(tmp_path: Path, port: int, log: str) -> subprocess.Popen[bytes]:
    """`cuprobe up` (one CPU worker) in a session of its own, as a terminal's foreground job is."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PATH": "/usr/bin:/bin",
        "CUPROBE_DATA_DIR": str(tmp_path / "data"),
        "CUPROBE_MAX_ATTEMPTS": "1",
        "CUPROBE_RECONCILE_INTERVAL_S": "1",
        "CUPROBE_UNSERVED_GRACE_S": "120",  # a loaded machine may take long to start the worker again
    }
    with (tmp_path / log).open("wb") as out:
        return subprocess.Popen(
            [*CLI, "up", "--port", str(port), "--cpu-concurrency", "1"],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path, start_new_session=True,
            preexec_fn=as_terminal_foreground,
        )


def _stop(proc: subprocess.Popen[Any], sent: signal.Signals) -> None:
    """Send `sent` to the process group of `proc` (as a terminal or a service manager does) and wait for it to end;
    nothing when it has ended already."""
    if proc.poll() is None:
        os.killpg(proc.pid, sent)
        proc.wait(120 if sent != signal.SIGKILL else 30)


def test_ctrl_c_on_up_hands_the_running_job_back_and_the_next_up_runs_it_uncounted(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole foreground group): `up` stops its workers with a cold shutdown, whose pool process
    stops the probe and hands the job back. Before, the worker waited for the job (40 s here), `up` killed it after
    30 s, and the next `up` ended the job `crashed`, lost with its worker once."""
    port = free_port()
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    store = Store(f"sqlite:///{tmp_path / 'data' / 'cuprobe.db'}")
    up = _up(tmp_path, port, "up1.log")
    try:
        wait_serving(up, api, tmp_path / "up1.log")
        job = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "sleep", "seconds": 40}}).json()
        probes = _probe_started(api, job["id"])
        _stop(up, signal.SIGINT)
    finally:
        _stop(up, signal.SIGKILL)
    assert still_running(probes) == []
    _assert_handed_back(store, job["id"], tmp_path / "data")
    again = _up(tmp_path, port, "up2.log")
    try:
        wait_serving(again, api, tmp_path / "up2.log")
        _assert_ran_again(api, store, job["id"])
        status = subprocess.run(
            [*CLI, "status", job["id"]],
            env={**os.environ, "PYTHONPATH": str(REPO), "CUPROBE_API_URL": f"http://127.0.0.1:{port}"},
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )
        assert status.returncode == 0 and "attempts=2 (1 handed back) clean" in status.stdout, status
    finally:
        os.killpg(again.pid, signal.SIGTERM)
        again.wait(60)
        store.engine.dispose()


@pytest.fixture
def one_attempt_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with fresh_stack(
        tmp_path_factory,
        "graceful",
        CUPROBE_MAX_ATTEMPTS="1",
        # Queued jobs on a queue no worker serves end `unavailable` a second after they were stored...
        CUPROBE_UNSERVED_AFTER_S="1",
        CUPROBE_UNSERVED_GRACE_S="1",
        CUPROBE_REGISTRY_REFRESH_S="0.5",
    ) as stack:
        yield stack


def test_sigterm_to_the_worker_group_hands_the_running_job_back(one_attempt_stack: Stack) -> None:
    """`cuprobe worker` stopped as a service manager stops a service (SIGTERM to every process of it): its pool
    process got SIGTERM and died at once, leaving the job running, to be counted as lost with its worker. The API
    keeps running meanwhile: the handed-back job waits for its worker to come back, while a job queued behind it,
    never started, ends `unavailable` as soon as no worker serves the queue (the unserved-queue rule)."""
    stack = one_attempt_stack
    api = stack.start_api()
    log = stack.settings.data_dir / "cuprobe-worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [*CLI, "worker", "--no-gpus", "--cpu-concurrency", "1"],
            env={**os.environ, **stack.env, "PYTHONPATH": str(REPO)},
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while b"ready." not in log.read_bytes():
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        while not api.get("/health").json().get("workers"):  # the API sees it: the job will not be refused
            assert time.monotonic() < deadline, api.get("/health").json()
            time.sleep(0.2)
        job = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "sleep", "seconds": 8}}).json()
        probes = _probe_started(api, job["id"])
        behind = api.post("/jobs", json={"probe": "selftest"}).json()  # waits: the one pool process is busy
        _stop(worker, signal.SIGTERM)
    finally:
        _stop(worker, signal.SIGKILL)
    assert still_running(probes) == []
    assert wait_for(api, behind["id"], timeout=120)["outcome"] == "unavailable"  # the rule has run
    _assert_handed_back(stack.store, job["id"], stack.settings.data_dir)
    stack.start_worker(concurrency=1)
    _assert_ran_again(api, stack.store, job["id"])
