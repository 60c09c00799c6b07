"""The service path of a sweep (ServiceRunner): a process whose queue no live worker serves, when the runner is told
which queues are served, ends `unavailable` at once instead of waiting for a worker until its deadline."""

from __future__ import annotations

from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Job, Store
from cuprobe.service.models import Outcome
from cuprobe.service.sweep.definition import parse_definition
from cuprobe.service.sweep.execute import ServiceRunner, run_sweep

GRID = 'name = "unserved"\n[[entry]]\nprobe = "uninit-read"\ntool = "initcheck"\n'


def test_a_process_for_a_queue_nobody_serves_ends_unavailable_at_once(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'c.db'}")
    store = Store(settings.database)
    store.migrate()
    sent: list[Job] = []
    runner = ServiceRunner(store, settings, sent.append, poll_s=0.05, served=lambda: {"cpu", "cpu.sweep"})
    sweep = run_sweep(parse_definition(GRID), runner)
    (case,) = sweep.cases
    assert case.outcome is Outcome.UNAVAILABLE
    assert not sent  # never handed to the broker
    (job,) = store.jobs(probe="uninit-read")
    assert job.state == "done" and job.outcome == "unavailable" and job.lane == "sweep"
    assert "no worker serves queue gpu." in (job.message or "")

