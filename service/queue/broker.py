"""Sending jobs to Redis and reading back which job ids Redis still holds (queued or unacked)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import redis
from celery import Celery

from cuprobe.service.db.store import Job
from cuprobe.service.queue.celery_app import TASK_RUN_PROBE

# kombu's redis transport keeps priorities > 0 in sibling lists named queue + SEP + priority.
_PRIORITY_SEP = "\x06\x16"
_PRIORITY_STEPS = (3, 6, 9)
_UNACKED = "unacked"
WAITING = "waiting"
UNACKED = "unacked"


def enqueue(app: Celery, job: Job) -> None:
    """Send job `job.id` to its queue; the Celery task id is the job id, so duplicates are recognisable."""
    app.send_task(
        TASK_RUN_PROBE,
        args=[job.id],
        task_id=job.id,
        queue=job.queue,
        # Nobody waits on the Celery result (the store has it): a down backend must not block a submit.
        ignore_result=True,
        # Fail fast when Redis is down: the job is already stored and the reconciler resends it.
        retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5},
    )


def _task_id(raw: bytes | str) -> str | None:
    try:
        message: Any = json.loads(raw)
    except ValueError:
        return None
    if isinstance(message, list):  # unacked entries are [message, exchange, routing_key]
        message = message[0]
    headers = message.get("headers") or {} if isinstance(message, dict) else {}
    return headers.get("id")


def held_jobs(client: redis.Redis, queues: Iterable[str]) -> dict[str, str]:
    """Job ids Redis holds a message for: `waiting` in one of `queues`, or `unacked` (delivered)."""
    found: dict[str, str] = {}
    for raw in client.hvals(_UNACKED):
        if (task_id := _task_id(raw)) is not None:
            found[task_id] = UNACKED
    for queue in set(queues):
        for key in [queue, *(f"{queue}{_PRIORITY_SEP}{step}" for step in _PRIORITY_STEPS)]:
            for raw in client.lrange(key, 0, -1):
                if (task_id := _task_id(raw)) is not None:
                    found[task_id] = WAITING
    return found
