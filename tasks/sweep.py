"""The scheduled sweep's tasks: beat sends one to run a definition; a maintenance pass sends one to resume a sweep
whose process ended. Both submit the sweep's processes as jobs on the sweep lanes and wait for them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import redis

from cuprobe.service.config import get_settings
from cuprobe.service.db.store import Store, utcnow
from cuprobe.service.queue.broker import enqueue
from cuprobe.service.queue.registry import WorkerRegistry
from cuprobe.service.sweep.definition import load_definition
from cuprobe.service.sweep.schedule import start_once
from cuprobe.service.sweep.scheduled import resume, run_and_store, scheduled_runner
from cuprobe.service.worker.gpu_slots import service_slots
from cuprobe.tasks.app import TASK_RESUME_SWEEP, TASK_RUN_SWEEP, app

__all__ = ["resume_sweep", "run_and_store", "scheduled_sweep"]

log = logging.getLogger(__name__)


def _store() -> Store:
    store = Store(get_settings().database)
    store.migrate()
    return store


@app.task(name=TASK_RUN_SWEEP, acks_late=False, max_retries=0)  # type: ignore[untyped-decorator]  # celery is untyped
def scheduled_sweep(definition_path: str) -> dict[str, Any]:
    """Run the beat's sweep once for this due minute; skip it while the previous one still runs."""
    settings, store = get_settings(), _store()
    definition = load_definition(Path(definition_path))
    # Batches for the GPU workers' slots as they are now (this CPU worker sees no GPU of its own).
    slots, why = service_slots(settings, WorkerRegistry(settings).view().workers)
    log.info("sweep %s: planned for %d slot(s): %s", definition.name, slots, why)
    sweep_id, runner, resumable = scheduled_runner(
        Path(definition_path), store, settings, lambda job: enqueue(app, job), slots
    )
    status, sweep = start_once(
        redis.Redis.from_url(settings.broker),
        definition.name,
        utcnow(),
        lambda: run_and_store(Path(definition_path), store, settings, runner, sweep_id=sweep_id, resume=resumable),
        lock_ttl_s=settings.sweep_lock_ttl_s,
    )
    return {"status": status, "sweep": sweep.id if sweep else None}


@app.task(name=TASK_RESUME_SWEEP, acks_late=False, max_retries=0)  # type: ignore[untyped-decorator]
def resume_sweep(sweep_id: str) -> dict[str, Any]:
    """Resume a scheduled sweep whose process ended (sent by the maintenance pass that found it)."""
    settings = get_settings()
    status, sweep = resume(
        redis.Redis.from_url(settings.broker), _store(), settings, sweep_id, lambda job: enqueue(app, job)
    )
    log.info("sweep %s: %s", sweep_id, status)
    return {"status": status, "sweep": sweep.id if sweep else None}
