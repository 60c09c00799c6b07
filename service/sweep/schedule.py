"""Start a scheduled sweep at most once per due time, and never while the same definition still runs.

Only one beat process should run. If a second is started by mistake, both send the task at the same due
minute; the first task to SET NX the Redis key `cuprobe:sweep:due:<definition>:<due minute>` runs it and the
other finds the key taken. A sweep still running when the next is due holds `cuprobe:sweep:running:<definition>`
(with a TTL, so a dead sweep cannot block forever), and the next due sweep is skipped, not queued behind it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime

import redis

from service.models.sweep import Sweep


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
    token = uuid.uuid4().hex
    if not client.set(running_key(definition), token, nx=True, ex=int(lock_ttl_s)):
        return "skipped: the previous sweep of this definition is still running", None
    try:
        return "ran", run()
    finally:
        # Release only our own lock: compare-and-delete, so an expired-and-retaken lock is left alone.
        client.eval(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
            1,
            running_key(definition),
            token,
        )
