"""The run_probe task: runs one stored job on this worker (CUDA only ever in the probe subprocess)."""

from __future__ import annotations

from functools import cache
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from cuprobe.service.config import get_settings
from cuprobe.service.db.store import Store
from cuprobe.service.queue.ended import EndAnnouncer
from cuprobe.service.worker.execute import execute_job
from cuprobe.service.worker.stopping import sigterm_deferred
from cuprobe.tasks.app import TASK_RUN_PROBE, app


@cache
def _store() -> Store:
    return Store(get_settings().database, timeout_s=get_settings().store_timeout_s)


@cache
def _announcer() -> EndAnnouncer:
    return EndAnnouncer(get_settings())


_limits = get_settings()


@app.task(  # type: ignore[untyped-decorator]  # celery is untyped
    name=TASK_RUN_PROBE,
    # Ack only after the result is stored: a worker that dies mid-job leaves the job to be redelivered.
    acks_late=True,
    # A killed pool child (OOM, SIGKILL) requeues the job; store.claim counts attempts and gives up.
    reject_on_worker_lost=True,
    # Soft limit: stop the probe and store `timeout`; both stay below Redis' visibility timeout so a
    # running job is never handed to a second worker (Settings refuses limits that are not).
    soft_time_limit=_limits.task_soft_time_limit_s,
    # Hard limit: kill the pool child if the soft limit could not end the job.
    time_limit=_limits.task_time_limit_s,
    # Celery never retries by itself: retries are redeliveries, counted in the store.
    max_retries=0,
)
def run_probe(job_id: str) -> dict[str, Any]:
    """Run job `job_id` once; a redelivered or duplicate message finds its result and stores nothing."""
    # SIGTERM while the job runs (the worker is stopping): the job is handed back, then the process ends (stopping.py).
    with sigterm_deferred() as stop:
        report = execute_job(
            job_id,
            store=_store(),
            settings=get_settings(),
            interrupts=(SoftTimeLimitExceeded,),
            time_limit_s=get_settings().task_soft_time_limit_s,
            announce=_announcer(),
            stop=stop,
        )
    return report.summary()
