"""Periodic maintenance (Celery beat): reconcile the store with Redis, resume scheduled sweeps whose process ended,
prune old artifacts."""

from __future__ import annotations

from typing import Any

from cuprobe.service.config import get_settings
from cuprobe.service.db.artifacts import prune
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models.queues import CPU
from cuprobe.service.queue.reconciler import reconcile_once
from cuprobe.tasks.app import TASK_RECONCILE, TASK_RESUME_SWEEP, app
from cuprobe.tasks.probe import _store


@app.task(name=TASK_RECONCILE, acks_late=False, ignore_result=True)  # type: ignore[untyped-decorator]
def reconcile_task() -> dict[str, Any]:
    """One reconcile pass (skipped when the API's reconciler holds the lock), scheduled sweeps to resume sent, then
    artifact pruning."""
    settings = get_settings()
    store = _store()
    report = reconcile_once(settings, store, app)
    # A sweep this host's CPU worker was running when it stopped (`gone` can only tell for this host's processes).
    orphans = SweepStore(store).orphans()
    for sweep_id in orphans:
        app.send_task(TASK_RESUME_SWEEP, args=[sweep_id], queue=CPU)
    pruned = prune(
        settings.data_dir / "jobs", settings.artifact_retention_days, settings.artifact_max_total_bytes
    )
    if report is None:
        return {"skipped": True, "pruned": pruned, "resumes_sent": len(orphans)}
    return {
        "expired": len(report.expired),
        "resent": len(report.resent),
        "given_up": len(report.given_up),
        "pruned": pruned,
        "resumes_sent": len(orphans),
    }
