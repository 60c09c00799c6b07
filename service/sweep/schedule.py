"""Start a scheduled sweep at most once per due time, and never while the same definition still runs.

Only one beat process should run. If a second is started by mistake, both send the task at the same due
minute; the first task to SET NX the Redis key `cuprobe:sweep:due:<definition>:<due minute>` runs it and the
other finds the key taken (that key is a marker of the due time, kept until it expires, not a lock). A sweep still
running when the next is due holds the redis-py lock `cuprobe:sweep:running:<definition>` (owner token, a TTL so a
dead sweep cannot block forever, released when the sweep ends), and the next due sweep is skipped, not queued.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

import redis
from redis.exceptions import LockError

from cuprobe.service.models.sweep import Sweep

log = logging.getLogger(__name__)


def due_key(definition: str, due: datetime) -> str:
    return f"cuprobe:sweep:due:{definition}:{due.strftime('%Y-%m-%dT%H:%M')}"


def running_key(definition: str) -> str:
    return f"cuprobe:sweep:running:{definition}"


def start_once(
    client: redis.Redis,
    definition: str,
    due: datetime,
    run: Callable[[], Sweep],
    *,
    lock_ttl_s: float,
) -> tuple[str, Sweep | None]:
    """("ran", sweep), or ("skipped: why", None) when this due time was taken or the last sweep still runs."""
    if not client.set(due_key(definition, due), "1", nx=True, ex=int(lock_ttl_s)):
        return "skipped: another beat already started the sweep due at this time", None
    # redis-py's lock: an owner token, and a compare-and-delete release that leaves an expired-and-retaken
    # lock alone.
    running = client.lock(running_key(definition), timeout=lock_ttl_s, blocking=False)
    if not running.acquire():
        return "skipped: the previous sweep of this definition is still running", None
    try:
        return "ran", run()
    finally:
        try:
            running.release()
        except LockError as exc:  # it outlived its TTL and another sweep holds it now: leave theirs
            log.warning("sweep lock of %s not released: %s", definition, exc)
