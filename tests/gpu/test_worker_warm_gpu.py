"""On the GPU: a GPU worker's warm starts (service/worker/warm.py) with the real sanitizer. A sweep job marked
`warm_next` leaves a spare in the worker process (a sanitizer process with its CUDA context made); the next job like
it runs there and finds what a cold job finds; a timing probe taking the GPU ends the spare, and its context's
memory goes back to the GPU before the probe's body runs."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuprobe.proctree import group_alive
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.models import ProbeRequest, Tool
from cuprobe.service.models.queues import Lane
from cuprobe.service.probing.environment import gpu_facts
from cuprobe.service.queue.submit import JobSpec, check, create
from cuprobe.service.worker import warm
from cuprobe.service.worker.execute import execute_job
from cuprobe.service.worker.gpu_slots import gpu_held, spares_folder
from cuprobe.service.worker.spare_registry import PGID_NAME

pytestmark = pytest.mark.gpu

NARROW = {"m": 32, "k": 32, "tile": 32, "n": [1, 33, 64], "variants": ["unguarded", "guarded", "torch"]}


@pytest.fixture
def worker(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Settings, str]]:
    """This process as a GPU worker's pool process, pinned to the GPU by its uuid."""
    uuid = gpu_facts()[3] or "0"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", uuid)
    warm.close_worker_spares()
    yield settings.model_copy(update={"data_dir": tmp_path / "data"}), uuid
    warm.close_worker_spares()


def _memory_used_mib(uuid: str) -> int:
    out = subprocess.run(
        ["nvidia-smi", "-i", uuid, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[0])


def _job(store: Store, settings: Settings, *, warm_next: bool) -> str:
    request = ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, params=NARROW)
    spec = JobSpec.model_validate({**request.model_dump(), "lane": Lane.SWEEP, "warm_next": warm_next})
    return create(check(spec, settings), store, settings).id


def _ran(store: Store, settings: Settings, job_id: str) -> tuple[dict[str, object], list[tuple[object, ...]]]:
    report = execute_job(job_id, store=store, settings=settings)
    assert report.stored, report
    job = store.get(job_id)
    assert job is not None and job.result is not None, job
    found = sorted((f.signature, f.count, f.kernel, str(f.confirmation)) for f in store.findings(job_id))
    return job.result, found


def test_a_job_in_the_workers_spare_finds_what_a_cold_one_finds_and_a_timing_probe_ends_it(
    worker: tuple[Settings, str], tmp_path: Path
) -> None:
    settings, uuid = worker
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    cold, cold_found = _ran(store, settings, _job(store, settings, warm_next=True))
    assert cold["warm_start"] is False and cold["outcome"] == "findings" and cold_found
    pool = warm.worker_spares(settings, uuid)
    assert pool is not None and pool.wait_ready(1, 180) == 1, "the marked job left no ready spare"

    hot, hot_found = _ran(store, settings, _job(store, settings, warm_next=True))
    assert hot["warm_start"] is True
    assert (hot["outcome"], hot["records"], hot_found) == (cold["outcome"], cold["records"], cold_found)

    assert pool.wait_ready(1, 180) == 1, "the second marked job left no ready spare"
    (entry,) = sorted(spares_folder(settings.data_dir, uuid).glob(f"*/*/{PGID_NAME}"))
    pgid = int(entry.read_text())
    with_spare = _memory_used_mib(uuid)
    with gpu_held(settings.data_dir / "locks", uuid, exclusive=True, data_dir=settings.data_dir):
        # Where a timing probe runs: no process of the spare left, and its context's memory given back.
        assert not group_alive(pgid)
        deadline = time.monotonic() + 10
        while (freed := with_spare - _memory_used_mib(uuid)) < 100 and time.monotonic() < deadline:
            time.sleep(0.2)
        print(f"GPU memory used with the spare {with_spare} MiB, freed when it ended {freed} MiB")
        assert freed >= 100, f"ending the spare gave back {freed} MiB of {with_spare} MiB"

    after, after_found = _ran(store, settings, _job(store, settings, warm_next=False))
    assert after["warm_start"] is False  # its spare was ended: a cold start, and the same findings
    assert (after["outcome"], after["records"], after_found) == (cold["outcome"], cold["records"], cold_found)
