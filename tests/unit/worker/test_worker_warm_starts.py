"""Warm starts on a GPU worker: a sweep job that a later job like it follows leaves a spare in its worker process,
and the next such job runs in it, with its own parameters and findings; a job without the mark leaves none; a spare
nobody takes ends; a timing probe that takes the GPU ends every spare first, and none starts while it holds the GPU.

The sanitizer is the replay stand-in running the real selftest target, as in tests/unit/probing/test_warm_starts.py;
the jobs run through the worker's own execute_job against a real (SQLite) store."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.proctree import group_alive
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.models.queues import Lane
from cuprobe.service.probing.runner import start_spare
from cuprobe.service.probing.spares import Spare, Spares
from cuprobe.service.queue.submit import JobSpec, check, create
from cuprobe.service.worker import warm
from cuprobe.service.worker.execute import execute_job
from cuprobe.service.worker.gpu_slots import gpu_held, spares_folder
from cuprobe.service.worker.spare_registry import PGID_NAME
from tests.conftest import VERSIONS, capture, replaying
from tests.waiting import until

GPU = "GPU-warm-test"


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings) -> Iterator[Settings]:
    """A GPU worker process's settings (pinned to GPU by CUDA_VISIBLE_DEVICES), replaying with the target running."""
    replaying(monkeypatch, capture(VERSIONS[1], "initcheck_ok"), target=True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", GPU)
    warm.close_worker_spares()
    yield replay_settings.model_copy(update={"data_dir": tmp_path / "data"})
    warm.close_worker_spares()


def _store(tmp_path: Path) -> Store:
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    return store


def _job(store: Store, settings: Settings, behaviour: str = "ok", *, warm_next: bool = False) -> str:
    request = ProbeRequest(probe="selftest", tool=Tool.INITCHECK, params={"behaviour": behaviour}, timeout_s=60)
    spec = JobSpec.model_validate({**request.model_dump(), "lane": Lane.SWEEP, "warm_next": warm_next})
    return create(check(spec, settings), store, settings).id


def _pool(settings: Settings) -> Spares:
    pool = warm.worker_spares(settings, GPU)
    assert pool is not None
    return pool


def _registered(settings: Settings) -> list[Path]:
    return sorted(spares_folder(settings.data_dir, GPU).glob(f"*/*/{PGID_NAME}"))


def _run(store: Store, settings: Settings, job_id: str) -> dict[str, object]:
    report = execute_job(job_id, store=store, settings=settings)
    assert report.stored, report
    job = store.get(job_id)
    assert job is not None and job.result is not None
    return job.result


def test_the_job_after_a_marked_one_runs_in_the_spare_it_left(tmp_path: Path, worker: Settings) -> None:
    store = _store(tmp_path)
    first = _run(store, worker, _job(store, worker, warm_next=True))
    assert first["outcome"] == Outcome.CLEAN.value and first["warm_start"] is False
    pool = _pool(worker)
    assert pool.wait_ready(1, 60) == 1, "the marked job left no spare"
    assert len(_registered(worker)) == 1  # findable by a timing probe in another worker process

    # The spare was readied for an `ok` run; this job breaks its expectation: its finding shows its own
    # parameters reached the waiting target.
    second_id = _job(store, worker, "violate")
    second = _run(store, worker, second_id)
    assert second["warm_start"] is True and second["outcome"] == Outcome.FINDINGS.value
    assert second["params"]["behaviour"] == "violate"  # type: ignore[index]
    assert [f.kind for f in store.findings(second_id)] == ["expectation-violation"]
    assert pool.taken == 1
    # Not marked: it readies none, and the spare it ran in is gone with its folder (removed as its run ends: waited
    # for, up to 30 s, so a loaded machine does not fail it).
    until(lambda: not pool.alive() and not _registered(worker), "the spare it ran in is gone", look_s=0.1)
    assert pool.alive() == 0 and _registered(worker) == []


def test_a_job_without_the_mark_leaves_no_spare_and_the_next_starts_cold(tmp_path: Path, worker: Settings) -> None:
    store = _store(tmp_path)
    _run(store, worker, _job(store, worker))
    pool = _pool(worker)
    assert pool.wait_ready(1, 2) == 0 and pool.alive() == 0 and _registered(worker) == []
    second = _run(store, worker, _job(store, worker, "violate"))
    assert second["warm_start"] is False and second["outcome"] == Outcome.FINDINGS.value


def test_a_spare_no_job_takes_ends_after_the_idle_time(tmp_path: Path, worker: Settings) -> None:
    settings = worker.model_copy(update={"worker_spare_idle_s": 1.0})
    store = _store(tmp_path)
    _run(store, settings, _job(store, settings, warm_next=True))
    pool = _pool(settings)
    assert pool.wait_ready(1, 60) == 1
    (entry,) = _registered(settings)
    pgid = int(entry.read_text())
    # The spare is killed, then its folder (with its registration) removed: wait for all of it, not the first part.
    def gone() -> bool:
        return not pool.alive() and not group_alive(pgid) and not _registered(settings)

    until(gone, "the idle spare is gone, its registration too", timeout=60, look_s=0.1)
    assert pool.idled == 1 and pool.alive() == 0
    assert not group_alive(pgid) and _registered(settings) == []


def test_a_timing_probe_taking_the_gpu_ends_every_spare_first(tmp_path: Path, worker: Settings) -> None:
    store = _store(tmp_path)
    _run(store, worker, _job(store, worker, warm_next=True))
    pool = _pool(worker)
    assert pool.wait_ready(1, 60) == 1
    (entry,) = _registered(worker)
    pgid = int(entry.read_text())
    locks = worker.data_dir / "locks"
    with gpu_held(locks, GPU, exclusive=False, data_dir=worker.data_dir):
        assert group_alive(pgid), "a shared holder (any other probe) leaves the spare alone"
    with gpu_held(locks, GPU, exclusive=True, data_dir=worker.data_dir):
        # Inside the exclusive hold (where a timing probe runs): no process of the spare is left.
        assert not group_alive(pgid)
    # The worker process that owned it finds it dead: its next job like it starts cold, and is right.
    second = _run(store, worker, _job(store, worker, "violate"))
    assert second["warm_start"] is False and second["outcome"] == Outcome.FINDINGS.value


def test_no_spare_starts_while_a_timing_probe_holds_the_gpu(tmp_path: Path, worker: Settings) -> None:
    pool = _pool(worker)
    request = ProbeRequest(probe="selftest", tool=Tool.INITCHECK, params={"behaviour": "ok"}, timeout_s=60)
    made: list[float] = []

    def make() -> Spare | None:
        made.append(time.monotonic())
        return start_spare(request, worker, False, pool.root)

    held, release = threading.Event(), threading.Event()
    released: list[float] = []

    def timing_probe() -> None:
        with gpu_held(worker.data_dir / "locks", GPU, exclusive=True, data_dir=worker.data_dir):
            held.set()
            release.wait(30)
            released.append(time.monotonic())

    holder = threading.Thread(target=timing_probe)
    holder.start()
    assert held.wait(30)
    pool.budget = 1
    assert pool.ask(make, lambda: True)
    time.sleep(1.0)  # the pool's starter thread is due now; it waits for the GPU
    release.set()
    holder.join(30)
    assert pool.wait_ready(1, 60) == 1
    assert made and released and made[0] > released[0], "a spare started while a timing probe held the GPU"


def test_warm_starts_off_gives_a_worker_no_spares(worker: Settings) -> None:
    assert warm.worker_spares(worker.model_copy(update={"warm_starts": False}), GPU) is None
    assert warm.worker_spares(worker, "") is None  # a worker without a GPU (the CPU worker)


def test_the_spare_folders_of_ended_pool_processes_are_cleared(tmp_path: Path, worker: Settings) -> None:
    folder = spares_folder(worker.data_dir, GPU)
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = folder / f"worker-{gone.pid}" / "spare-x"
    living = folder / f"worker-{os.getppid()}" / "spare-y"  # a process that is still running
    for spare in (dead, living):
        spare.mkdir(parents=True)
        (spare / "run.xml").write_text("<partial")
    _pool(worker)
    assert not dead.parent.exists() and (living / "run.xml").exists()
