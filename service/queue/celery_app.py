"""The Celery configuration shared by workers, beat and senders: Redis, JSON only, reliability settings in the open.

The service sends tasks by name (the constants below); only tasks/ defines them, so nothing here imports tasks/.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.schedules import crontab

from cuprobe.service.config import Settings
from cuprobe.service.models.queues import CPU

TASK_RUN_PROBE = "cuprobe.run_probe"
TASK_RECONCILE = "cuprobe.reconcile"
TASK_RUN_SWEEP = "cuprobe.run_sweep"
TASK_RESUME_SWEEP = "cuprobe.resume_sweep"


def sweep_schedule(settings: Settings) -> dict[str, Any]:
    """The beat entry for the scheduled sweep (empty when CUPROBE_SWEEP_SCHEDULE is unset)."""
    if not settings.sweep_schedule:
        return {}
    line = " ".join(settings.sweep_schedule.split())  # from_string splits on single spaces
    try:
        schedule = crontab.from_string(line)
    except ValueError as exc:
        raise ValueError(
            f"CUPROBE_SWEEP_SCHEDULE must be a crontab line of 5 fields (minute hour day month weekday), "
            f"got {settings.sweep_schedule!r}: {exc}"
        ) from exc
    return {
        f"sweep:{settings.sweep_definition}": {
            "task": TASK_RUN_SWEEP,
            "schedule": schedule,
            "args": [str(settings.sweep_definition)],
            # The sweep task only submits jobs to the sweep lanes and waits for them: it runs on the CPU queue.
            "options": {"queue": CPU},
        }
    }


def make_celery(settings: Settings) -> Celery:
    """A Celery app configured from `settings` (the worker, the API and beat each build one)."""
    app = Celery("cuprobe", broker=settings.broker, backend=settings.result_backend_url or settings.broker)
    app.conf.update(
        # JSON only: a pickle on a shared Redis is remote code execution.
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        # Ack after the task returns: a worker that dies mid-job leaves the message to be redelivered.
        task_acks_late=True,
        # ...and when the pool child is killed (OOM, SIGKILL), requeue it instead of acking it as failed.
        task_reject_on_worker_lost=True,
        # One job at a time per process: a prefetched job would wait behind a long sanitizer run.
        worker_prefetch_multiplier=1,
        broker_transport_options={
            # Redis redelivers an unacked job after this; every time limit stays below it (Settings checks).
            "visibility_timeout": settings.visibility_timeout_s,
            # Poll queues in sorted order: `gpu.sm90` before `gpu.sm90.sweep`, so a gate job never waits
            # behind the sweep backlog.
            "queue_order_strategy": "sorted",
        },
        result_backend_transport_options={"visibility_timeout": settings.visibility_timeout_s},
        # Results that matter live in the store, so tasks keep none in the backend.
        task_ignore_result=True,
        result_expires=24 * 3600,
        task_default_queue=CPU,
        # Task events on, so Flower and `celery inspect` see the workers and their jobs.
        worker_send_task_events=True,
        task_send_sent_event=True,
        # A Redis blip must not kill a long sanitizer run: the store makes a later redelivery harmless.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        # Keep reconnecting to a Redis that restarts, forever: the store still holds every job.
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        # A job should not be retried by Celery itself: the store counts attempts (see store.claim).
        task_track_started=True,
        worker_hijack_root_logger=False,
        beat_schedule={
            "reconcile": {
                "task": TASK_RECONCILE,
                "schedule": settings.reconcile_interval_s,
                # A pass nobody ran in time is dropped, not piled up behind a busy CPU worker.
                "options": {"queue": CPU, "expires": settings.reconcile_interval_s},
            },
            **sweep_schedule(settings),
        },
    )
    return app

