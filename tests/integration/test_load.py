"""Trivial jobs submitted over HTTP by concurrent submitters: none lost or duplicated (bench/ measures the big load)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import func, select

from cuprobe.service.db.store import Job, Run
from tests.integration.conftest import Figures
from tests.integration.stack import Stack

# Enough to interleave submitters, claims and results; the load's speed is a benchmark, not a test.
JOBS = 200
SUBMITTERS = 4


@pytest.mark.timeout(900)  # a loaded 2-core machine drains slowly; correctness, not speed, is asserted
def test_concurrent_jobs_none_lost_none_duplicated(postgres_stack: Stack, figures: Figures) -> None:
    if not hasattr(postgres_stack, "api_client"):
        postgres_stack.api_client = postgres_stack.start_api()  # type: ignore[attr-defined]
    base_url = str(postgres_stack.api_client.base_url)  # type: ignore[attr-defined]
    spec = {"probe": "selftest", "params": {"behaviour": "ok"}, "lane": "sweep"}

    def submit_many(n: int) -> list[str]:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            ids = []
            for _ in range(n):
                response = client.post("/jobs", json=spec)
                assert response.status_code == 202, response.text
                ids.append(response.json()["id"])
            return ids

    start = time.monotonic()
    with ThreadPoolExecutor(SUBMITTERS) as pool:
        ids = [i for chunk in pool.map(submit_many, [JOBS // SUBMITTERS] * SUBMITTERS) for i in chunk]
    submitted = time.monotonic() - start
    assert len(set(ids)) == JOBS
    store = postgres_stack.store
    deadline = time.monotonic() + 780
    while True:
        with store.session() as s:
            pending = s.scalar(
                select(func.count()).select_from(Job).where(Job.id.in_(ids), Job.state != "done")
            )
        if pending == 0:
            break
        assert time.monotonic() < deadline, f"{pending} of {JOBS} jobs not done after 780 s"
        time.sleep(0.5)
    drained = time.monotonic() - start
    with store.session() as s:
        outcomes = dict(
            s.execute(select(Job.outcome, func.count()).where(Job.id.in_(ids)).group_by(Job.outcome)).all()
        )
        results_per_job = s.execute(
            select(Run.job_id, func.count())
            .where(Run.job_id.in_(ids), Run.outcome.is_not(None))
            .group_by(Run.job_id)
        ).all()
        attempts = s.scalar(select(func.max(Job.attempts)).where(Job.id.in_(ids)))
    lost = JOBS - len(results_per_job)
    duplicated = sum(1 for _, n in results_per_job if n > 1)
    figures.record(
        f"{JOBS} trivial jobs",
        submitters=SUBMITTERS,
        submit_s=f"{submitted:.1f}",
        submit_rate_per_s=f"{JOBS / submitted:.0f}",
        drain_s=f"{drained:.1f}",
        throughput_per_s=f"{JOBS / drained:.1f}",
        lost=lost,
        duplicated=duplicated,
        max_attempts=attempts,
        outcomes=outcomes,
        worker_processes=2,
    )
    assert (lost, duplicated) == (0, 0)
    assert outcomes == {"clean": JOBS}
