"""Running reconcile passes: a Redis lock so only one runs at a time, and the loop the API process runs."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

import redis
from celery import Celery
from redis.exceptions import LockError
from redis.lock import Lock

from cuprobe.service.config import Settings
from cuprobe.service.db.artifacts import prune
from cuprobe.service.db.store import Store, utcnow
from cuprobe.service.queue.broker import enqueue, held_jobs
from cuprobe.service.queue.reconcile import ReconcileReport, reconcile
from cuprobe.service.queue.registry import WorkerRegistry
from cuprobe.service.queue.served import served_reader

log = logging.getLogger(__name__)
LOCK_KEY = "cuprobe:reconcile-lock"
LOCK_MIN_TTL_S = 30.0
PRUNE_EVERY_S = 3600.0


def _client(settings: Settings) -> redis.Redis:
    return redis.Redis.from_url(settings.broker, socket_timeout=5, socket_connect_timeout=2)


def broker_reader(settings: Settings) -> Callable[[set[str]], dict[str, str]]:
    """A function returning job id -> waiting/unacked for what Redis holds (raises if Redis is down)."""

    def read(queues: set[str]) -> dict[str, str]:
        client = _client(settings)
        try:
            return held_jobs(client, queues)
        finally:
            client.close()

    return read


def lock_ttl_s(settings: Settings) -> float:
    """How long a holder that died keeps the reconcile lock: longer than any pass takes."""
    return max(LOCK_MIN_TTL_S, 3 * settings.reconcile_interval_s)


def alive_reader(registry: WorkerRegistry) -> Callable[[str | None], bool | None]:
    """A function saying whether a job's worker (host:pid) still heartbeats in the registry (None: cannot tell)."""

    def alive(worker: str | None) -> bool | None:
        return registry.view().alive(worker)

    return alive


@contextmanager
def locked(settings: Settings) -> Iterator[bool]:
    """Yields True when this process holds the reconcile lock (or Redis is down and nobody can); the lock is
    redis-py's (an owner token, compare-and-delete release) and is released when the block ends, so the next
    pass, by any process, can run at once."""
    client = _client(settings)
    lock = client.lock(LOCK_KEY, timeout=lock_ttl_s(settings), blocking=False)
    try:
        try:
            mine = bool(lock.acquire())
        except redis.RedisError:
            yield True
            return
        try:
            yield mine
        finally:
            if mine:
                _release(lock)
    finally:
        client.close()


def _release(lock: Lock) -> None:
    try:
        lock.release()
    except LockError as exc:  # it expired during a long pass and someone else holds it now: leave theirs
        log.warning("reconcile lock not released: %s", exc)
    except redis.RedisError as exc:  # Redis went away: the lock expires by itself
        log.warning("reconcile lock not released (Redis unreachable): %s", exc)


def reconcile_once(
    settings: Settings,
    store: Store,
    app: Celery,
    registry: WorkerRegistry | None = None,
    grace_end: datetime | None = None,
) -> ReconcileReport | None:
    """One locked pass; None when another process holds the lock. `grace_end`: when the API's start-up grace for
    answering `unavailable` at submission ended (the API's reconciler thread)."""
    registry = registry or WorkerRegistry(settings)
    with locked(settings) as mine:
        if not mine:
            return None
        return reconcile(
            store,
            settings,
            broker_ids=broker_reader(settings),
            enqueue=lambda job: enqueue(app, job),
            served_queues=served_reader(registry),
            worker_alive=alive_reader(registry),
            grace_end=grace_end,
        )


class ReconcilerThread(threading.Thread):
    """Reconciles every `reconcile_interval_s` until stopped (the API runs one; beat runs the task too)."""

    def __init__(self, settings: Settings, store: Store, app: Celery, registry: WorkerRegistry | None = None) -> None:
        super().__init__(name="cuprobe-reconciler", daemon=True)
        self.settings, self.store, self.app = settings, store, app
        self.registry = registry or WorkerRegistry(settings)
        self.stopped = threading.Event()
        # Started with the API: submission answers `unavailable` at once only after this grace (served.after_grace).
        self.grace_end = utcnow() + timedelta(seconds=settings.unserved_grace_s)

    def run(self) -> None:
        pruned_at = 0.0
        while not self.stopped.wait(self.settings.reconcile_interval_s):
            if time.monotonic() - pruned_at > PRUNE_EVERY_S:
                pruned_at = time.monotonic()
                s = self.settings
                prune(s.data_dir / "jobs", s.artifact_retention_days, s.artifact_max_total_bytes)
            try:
                report = reconcile_once(self.settings, self.store, self.app, self.registry, self.grace_end)
            except Exception:  # keep reconciling: a store or broker outage is temporary
                log.exception("reconcile pass failed")
                continue
            if report and (report.expired or report.resent or report.given_up or report.stored or report.requeued):
                log.info(
                    "reconciled: %d expired, %d resent, %d given up, %d stored, %d re-queued",
                    len(report.expired),
                    len(report.resent),
                    len(report.given_up),
                    len(report.stored),
                    len(report.requeued),
                )
