"""The worker's report of a job, which the Celery task returns: the keys of the path the job took, and no others."""

from __future__ import annotations

from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.queue.submit import JobSpec, check, create
from cuprobe.service.worker.execute import execute_job


def test_a_stored_job_and_its_redelivery_report_what_each_did(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    job = create(check(JobSpec(probe="selftest", params={"behaviour": "ok"}), settings), store, settings)

    first = execute_job(job.id, store=store, settings=settings).summary()
    assert first == {
        "job_id": job.id,
        "ran": True,
        "attempt": 1,
        "stored": True,
        "outcome": "clean",
        "cancelled": False,
        "warm_start": False,
    }
    # A redelivered message finds the result and runs nothing: what it found, with no attempt or store.
    again = execute_job(job.id, store=store, settings=settings).summary()
    assert set(again) == {"job_id", "ran", "verdict", "state", "outcome"}
    assert again["ran"] is False and again["outcome"] == "clean" and again["verdict"] != "run"
