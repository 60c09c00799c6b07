"""Store outages during a run: a clean run is stored clean once the store is back, never replaced by a storage
failure, and a job never has two probes running at once (SQLite write-locked; a private PostgreSQL stopped)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import Figures
from tests.integration.private_pg import PrivateCluster
from tests.integration.stack import Stack, wait_for, wait_running
from tests.processes import processes_mentioning
from tests.redis_dbs import OwnedDb, owned_db


class Stacks(list[Stack]):
    """The stacks a test made, on a Redis database it owns; stopped after the test."""

    def __init__(self, db: OwnedDb) -> None:
        super().__init__()
        self.db = db

    def new(self, name: str, database_url: str, data: Path, **extra: str) -> Stack:
        self.db.flush()
        stack = Stack(name, broker_url=self.db.url, database_url=database_url, data_dir=data, **extra)
        self.append(stack)
        return stack


def _lock_sqlite(path: Path, seconds: float) -> threading.Thread:
    """Hold SQLite's write lock for `seconds` from another connection (what a long writer does)."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")

    def release() -> None:
        time.sleep(seconds)
        holder.execute("ROLLBACK")
        holder.close()

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def stacks() -> Iterator[Stacks]:
    with owned_db() as db:
        made = Stacks(db)
        yield made
        for stack in made:
            stack.stop()


def test_sqlite_locked_past_the_busy_timeout_while_storing_is_stored_clean_afterwards(
    tmp_path: Path, stacks: Stacks, figures: Figures
) -> None:
    db = tmp_path / "cuprobe.db"
    stack = stacks.new(
        "locked-finish", f"sqlite:///{db}", tmp_path,
        CUPROBE_STORE_TIMEOUT_S="2", CUPROBE_STALE_AFTER_S="60", CUPROBE_TASK_SOFT_TIME_LIMIT_S="70",
        CUPROBE_VISIBILITY_TIMEOUT_S="80",
    )
    stack.start_worker(concurrency=1)
    api = stack.start_api()
    job = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "sleep", "seconds": 1}}).json()
    wait_running(api, job["id"])
    locked = time.monotonic()
    # Longer than SQLite's own 30 s busy timeout: the run ends while the store cannot be written.
    holder = _lock_sqlite(db, 33)
    holder.join()
    done = wait_for(api, job["id"], timeout=60)
    assert (done["outcome"], done["attempts"]) == ("clean", 1), done
    assert "could not store" not in done["message"]
    runs = stack.store.runs(job["id"])
    assert [r.outcome for r in runs] == ["clean"]
    stored_after = f"{time.monotonic() - locked:.1f}"
    figures.record("sqlite locked 33 s at finish", outcome=done["outcome"], stored_after_s=stored_after)


def test_sqlite_locked_during_a_run_never_gives_the_job_two_probes(
    tmp_path: Path, stacks: Stacks, figures: Figures
) -> None:
    db = tmp_path / "cuprobe.db"
    stack = stacks.new(
        "locked-run", f"sqlite:///{db}", tmp_path,
        CUPROBE_STORE_TIMEOUT_S="2", CUPROBE_STALE_AFTER_S="20", CUPROBE_TASK_SOFT_TIME_LIMIT_S="100",
        CUPROBE_VISIBILITY_TIMEOUT_S="110", CUPROBE_TIMEOUT_S="60",
    )
    stack.start_worker(concurrency=2)  # a second pool process free to take the job while the first still runs it
    api = stack.start_api()
    response = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "sleep", "seconds": 40}})
    assert response.status_code == 202, response.text
    job = response.json()
    wait_running(api, job["id"])
    _lock_sqlite(db, 35)  # longer than stale_after_s: another worker may take the job once the lock goes
    most_at_once, deadline = 0, time.monotonic() + 150
    while (state := _state(api, job["id"])) != "done":
        assert time.monotonic() < deadline, f"job not done: {state}"
        probes = {c for pid in processes_mentioning(job["id"]) if (c := _attempt_of(pid))}
        most_at_once = max(most_at_once, len(probes))
        time.sleep(0.2)
    done = api.get(f"/jobs/{job['id']}").json()
    runs = stack.store.runs(job["id"])
    figures.record(
        "sqlite locked 35 s during a 40 s run", outcome=done["outcome"], attempts=done["attempts"],
        most_probes_at_once=most_at_once,
    )
    assert most_at_once == 1
    assert done["outcome"] == "clean" and sum(r.outcome is not None for r in runs) == 1, done
    assert all(r.finished_at is not None for r in runs)  # a stopped attempt's run is closed, not left open


def _state(api: httpx.Client, job_id: str) -> str:
    try:
        return str(api.get(f"/jobs/{job_id}").json()["state"])
    except (httpx.HTTPError, KeyError):
        return "unknown"


def _attempt_of(pid: int) -> str | None:
    """The attempt directory a live probe process writes to (`.../attempt-N/result.json` in its argv)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    if b"cuprobe.probes" not in argv or b"--out" not in argv:
        return None
    return argv[argv.index(b"--out") + 1].decode().rsplit("/", 2)[-2]


@pytest.fixture
def private_pg() -> Iterator[PrivateCluster]:
    cluster = PrivateCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.destroy()


def test_postgresql_stopped_during_a_run_and_restarted_stores_the_result(
    tmp_path: Path, stacks: Stacks, private_pg: PrivateCluster, figures: Figures
) -> None:
    stack = stacks.new(
        "pg-outage", private_pg.url, tmp_path, CUPROBE_STORE_TIMEOUT_S="2", CUPROBE_STALE_AFTER_S="60",
        CUPROBE_TASK_SOFT_TIME_LIMIT_S="70", CUPROBE_VISIBILITY_TIMEOUT_S="80",
    )
    stack.start_worker(concurrency=1)
    api = stack.start_api()
    job = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "sleep", "seconds": 2}}).json()
    wait_running(api, job["id"])
    private_pg.stop()
    time.sleep(10)  # the run ends while PostgreSQL is down
    private_pg.start()
    restarted = time.monotonic()
    done = wait_for(api, job["id"], timeout=60)
    assert (done["outcome"], done["attempts"]) == ("clean", 1), done
    assert [r.outcome for r in stack.store.runs(job["id"])] == ["clean"]
    after = f"{time.monotonic() - restarted:.1f}"
    figures.record("postgresql down 10 s", outcome=done["outcome"], stored_after_restart_s=after)
