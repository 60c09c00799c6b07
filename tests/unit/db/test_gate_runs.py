"""The Now page's gate runs: a gate the service refused (its jobs cancelled before any started) is not a run."""

from __future__ import annotations

from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.db.overview import gate_runs
from cuprobe.service.db.store import Store
from cuprobe.service.models.queues import gate_label
from cuprobe.service.queue.submit import JobSpec, submit


def _gate(store: Store, settings: Settings, run: str, jobs: int) -> list[str]:
    label = gate_label("own", run)
    spec = JobSpec(probe="selftest", tool="none", label=label)
    return [submit(spec, store, settings, lambda job: None).id for _ in range(jobs)]


def test_a_refused_gate_is_not_listed_and_one_that_ran_is(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'c.db'}")
    store = Store(settings.database)
    store.migrate()
    ran = _gate(store, settings, "ran", 2)
    store.cancel(ran[1])  # one job cancelled, one queued: this gate is a run
    for job_id in _gate(store, settings, "refused", 2):  # what `cuprobe gate` does when a later entry is refused
        store.cancel(job_id)
    assert [run.run for run in gate_runs(store)] == ["ran"]
