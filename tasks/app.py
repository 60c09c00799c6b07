"""The Celery app the worker and beat run: the shared configuration plus this package's task modules."""

from __future__ import annotations

from service.config import get_settings
from service.queue.celery_app import TASK_RECONCILE, TASK_RUN_PROBE, TASK_RUN_SWEEP, make_celery

__all__ = ["TASK_RECONCILE", "TASK_RUN_PROBE", "TASK_RUN_SWEEP", "app"]

app = make_celery(get_settings())
app.conf.include = ["tasks.probe", "tasks.maintenance", "tasks.sweep"]
