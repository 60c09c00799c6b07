"""The Celery app the worker and beat run: the shared configuration plus this package's task modules."""

from __future__ import annotations

from typing import Any

from celery import bootsteps, signals

from cuprobe.service.config import get_settings
from cuprobe.service.probing.secrets import not_dumpable
from cuprobe.service.queue.celery_app import (
    TASK_RECONCILE,
    TASK_RESUME_SWEEP,
    TASK_RUN_PROBE,
    TASK_RUN_SWEEP,
    make_celery,
)
from cuprobe.service.queue.registry import WorkerHeartbeat
from cuprobe.service.removed_settings import refuse_removed

__all__ = ["TASK_RECONCILE", "TASK_RESUME_SWEEP", "TASK_RUN_PROBE", "TASK_RUN_SWEEP", "app"]


class RegistryHeartbeat(bootsteps.StartStopStep):  # type: ignore[misc]  # celery is untyped
    """Publishes this worker in the worker registry (queues, GPU, pool pids, concurrency) from start to shutdown."""

    requires = ("celery.worker.components:Pool",)

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.heartbeat: WorkerHeartbeat | None = None

    def start(self, worker: Any) -> None:
        queues = sorted(worker.app.amqp.queues.consume_from or worker.app.amqp.queues)
        # The pool's concurrency: a GPU worker's K, which a sweep the service runs plans its batches by.
        slots = getattr(worker, "concurrency", None)
        slots = slots if isinstance(slots, int) else None
        self.heartbeat = WorkerHeartbeat(get_settings(), worker.hostname, queues, slots)
        self.heartbeat.start()

    def stop(self, worker: Any) -> None:
        if self.heartbeat is not None:
            self.heartbeat.stop()


refuse_removed()  # a worker or beat started by celery itself, not through `cuprobe worker`
app = make_celery(get_settings())
app.conf.include = ["cuprobe.tasks.probe", "cuprobe.tasks.maintenance", "cuprobe.tasks.sweep"]
app.steps["worker"].add(RegistryHeartbeat)


def _hide_secrets(**_: Any) -> None:
    """The worker (before it forks its pool) and beat hold the store and broker URLs: no job's command may read
    their /proc/PID/environ."""
    not_dumpable()


signals.worker_init.connect(_hide_secrets, weak=False)
signals.beat_init.connect(_hide_secrets, weak=False)
