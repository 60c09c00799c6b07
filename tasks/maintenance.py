"""Periodic maintenance (Celery beat): reconcile the store with Redis, prune old artifacts."""

from __future__ import annotations

from typing import Any

from service.config import get_settings
from service.db.artifacts import prune
from service.queue.reconciler import reconcile_once
from tasks.app import TASK_RECONCILE, app
from tasks.probe import _store


@app.task(name=TASK_RECONCILE, acks_late=False, ignore_result=True)  # type: ignore[untyped-decorator]
def reconcile_task() -> dict[str, Any]:
    """One reconcile pass (skipped when the API's reconciler holds the lock), then artifact pruning."""
    settings = get_settings()
    report = reconcile_once(settings, _store(), app)
    pruned = prune(
        settings.data_dir / "jobs", settings.artifact_retention_days, settings.artifact_max_total_bytes
    )
    if report is None:
        return {"skipped": True, "pruned": pruned}
    return {
        "expired": len(report.expired),
        "resent": len(report.resent),
        "given_up": len(report.given_up),
        "pruned": pruned,
    }
