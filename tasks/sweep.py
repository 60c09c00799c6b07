"""The scheduled sweep task: beat sends it; it submits the sweep's processes as jobs on the sweep lanes."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import redis

from service.config import Settings, get_settings
from service.db.store import Store, utcnow
from service.db.sweeps import SweepStore
from service.models.sweep import Sweep
from service.queue.broker import enqueue
from service.queue.registry import WorkerRegistry
from service.sweep.compare import changes
from service.sweep.definition import load_definition
from service.sweep.execute import ServiceRunner, run_sweep
from service.sweep.notify import notify
from service.sweep.schedule import start_once
from service.worker.gpu_slots import service_slots
from tasks.app import TASK_RUN_SWEEP, app

log = logging.getLogger(__name__)


def run_and_store(definition_path: Path, store: Store, settings: Settings, runner: Any) -> Sweep:
    """Run the definition, store it, diff it against the previous sweep, and tell the webhook if it changed."""
    definition = load_definition(definition_path)
    sweeps = SweepStore(store)
    sweep_id = uuid.uuid4().hex
    sweeps.start(sweep_id, definition.name)
    try:
        sweep = run_sweep(
            definition,
            runner,
            sweep_id=sweep_id,
            progress=lambda done, total, what: sweeps.progress(sweep_id, done, total, what),
        )
    except Exception as exc:
        sweeps.fail(sweep_id, f"{type(exc).__name__}: {exc}")
        raise
    sweeps.save(sweep)
    notify(changes(sweeps, sweep), settings.sweep_webhook_url)
    return sweep


@app.task(name=TASK_RUN_SWEEP, acks_late=False, max_retries=0)  # type: ignore[untyped-decorator]  # celery is untyped
def scheduled_sweep(definition_path: str) -> dict[str, Any]:
    """Run the beat's sweep once for this due minute; skip it while the previous one still runs."""
    settings = get_settings()
    store = Store(settings.database)
    store.migrate()
    definition = load_definition(Path(definition_path))
    # Batches for the GPU workers' slots as they are now (this CPU worker sees no GPU of its own).
    slots, why = service_slots(settings, WorkerRegistry(settings).view().workers)
    log.info("sweep %s: planned for %d slot(s): %s", definition.name, slots, why)
    runner = ServiceRunner(store, settings, lambda job: enqueue(app, job), slots=slots)
    status, sweep = start_once(
        redis.Redis.from_url(settings.broker),
        definition.name,
        utcnow(),
        lambda: run_and_store(Path(definition_path), store, settings, runner),
        lock_ttl_s=settings.sweep_lock_ttl_s,
    )
    return {"status": status, "sweep": sweep.id if sweep else None}
