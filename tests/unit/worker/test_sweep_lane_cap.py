"""A sweep-lane job is one batch of a sweep: the worker runs it with the sweep's record cap, as a local sweep runs
its processes, not the gate's: the 384-case grid through the service, planned for a worker's K = 4, sends batches
of 96 cases (about 16,000 initcheck records each), which the gate's cap of 10,000 would stop, leaving most of their
cases `sanitizer_error` ("hit its record cap before this case")."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.models import Outcome, ProbeRequest, Tool
from cuprobe.service.models.queues import Lane
from cuprobe.service.queue.submit import JobSpec, check, create
from cuprobe.service.worker.execute import execute_job
from tests.conftest import RUNS, replaying
from tests.unit.probing.test_record_cap_verdicts import PARAMS

CAPTURE = RUNS / "narrow-matmul-initcheck-2026.4.0.0"  # 6,624 records in 39 cases (H200)


@pytest.mark.parametrize(("lane", "truncated"), [(Lane.GATE, True), (Lane.SWEEP, False)])
def test_a_sweep_lane_job_keeps_the_sweeps_record_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings, lane: Lane, truncated: bool
) -> None:
    replaying(monkeypatch, CAPTURE, target=False)
    settings = replay_settings.model_copy(
        update={"data_dir": tmp_path / "data", "max_records": 1_000, "sweep_max_records": 100_000}
    )
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    request = ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, params=PARAMS, confirm=False)
    job = create(check(JobSpec.model_validate({**request.model_dump(), "lane": lane}), settings), store, settings)

    report = execute_job(job.id, store=store, settings=settings)

    done = store.get(job.id)
    assert report.stored and done is not None and done.outcome == Outcome.FINDINGS.value, done
    assert done.result is not None and done.result["records"] == 6_624
    assert done.result["truncated"] is truncated, done.result
