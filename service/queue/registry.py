"""The worker registry: each worker's heartbeat in Redis under a TTL, read by the API, the reconciler and the
unserved-queue rule through one cached, time-bounded read (never a broker inspection per request)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import threading
import time
from dataclasses import dataclass, field

import redis
from pydantic import BaseModel, ValidationError

from cuprobe import internal_env
from cuprobe.proctree import children
from cuprobe.service.config import Settings

log = logging.getLogger(__name__)
KEY_PREFIX = "cuprobe:worker:"
NAMES_KEY = "cuprobe:workers"
_GPU_QUEUE = re.compile(r"^gpu\.(sm[0-9a-z]+)")


class WorkerBeat(BaseModel):
    """One worker as its last heartbeat described it."""

    name: str
    hostname: str
    pid: int
    # The worker's own pid and its pool processes': a job's `worker` (host:pid) names one of them.
    pids: list[int]
    queues: list[str]
    gpu_uuid: str | None = None
    gpu: str | None = None
    arch: str | None = None
    # Its pool's concurrency: jobs it runs at once (a GPU worker's K sanitizer slots); None where not published.
    slots: int | None = None
    started_at: float
    beat_at: float

    def runs(self, identity: str | None) -> bool:
        """Whether the job worker `identity` (host:pid) is this worker or one of its pool processes."""
        host, _, pid = (identity or "").rpartition(":")
        return host == self.hostname and pid.isdigit() and int(pid) in self.pids


def client(settings: Settings) -> redis.Redis:
    """A Redis client whose every call is bounded by the registry timeout."""
    return redis.Redis.from_url(
        settings.broker,
        socket_timeout=settings.registry_timeout_s,
        socket_connect_timeout=settings.registry_timeout_s,
    )


def publish(conn: redis.Redis, beat: WorkerBeat, ttl_s: float) -> None:
    pipe = conn.pipeline()
    pipe.set(KEY_PREFIX + beat.name, beat.model_dump_json(), px=int(ttl_s * 1000))
    pipe.sadd(NAMES_KEY, beat.name)
    pipe.execute()


def withdraw(conn: redis.Redis, name: str) -> None:
    conn.delete(KEY_PREFIX + name)
    conn.srem(NAMES_KEY, name)


def read(conn: redis.Redis) -> list[WorkerBeat]:
    """Every worker whose heartbeat has not expired (two round trips, whatever else Redis holds)."""
    names = sorted(n.decode() if isinstance(n, bytes) else str(n) for n in conn.smembers(NAMES_KEY))
    if not names:
        return []
    found, expired = [], []
    for name, raw in zip(names, conn.mget([KEY_PREFIX + n for n in names]), strict=True):
        if raw is None:
            expired.append(name)
            continue
        try:
            found.append(WorkerBeat.model_validate_json(raw))
        except ValidationError:
            expired.append(name)
    if expired:
        conn.srem(NAMES_KEY, *expired)
    return found


@dataclass(frozen=True)
class RegistryView:
    """One read of the registry: the live workers, or why Redis could not be read."""

    workers: list[WorkerBeat] = field(default_factory=list)
    error: str | None = None
    read_at: float = 0.0

    @property
    def served_queues(self) -> set[str] | None:
        """Queues some live worker consumes; None when the registry could not be read."""
        return None if self.error else {q for w in self.workers for q in w.queues}

    def alive(self, identity: str | None) -> bool | None:
        """Whether the job worker `identity` belongs to a live worker; None when the registry could not be read."""
        return None if self.error else any(w.runs(identity) for w in self.workers)


class WorkerRegistry:
    """The cached reader: at most one Redis read per `registry_refresh_s`, whoever asks, each bounded by
    `registry_timeout_s`; concurrent callers wait for that one read instead of each opening a connection."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._conn = client(settings)
        self._lock = threading.Lock()
        self._view = RegistryView(error="not read yet")

    def view(self, *, max_age_s: float | None = None) -> RegistryView:
        max_age = self.settings.registry_refresh_s if max_age_s is None else max_age_s
        with self._lock:
            if self._view.read_at and time.monotonic() - self._view.read_at < max_age:
                return self._view
            try:
                self._view = RegistryView(read(self._conn), None, time.monotonic())
            except redis.RedisError as exc:
                self._view = RegistryView([], f"{type(exc).__name__}: {exc}", time.monotonic())
            return self._view


def describe(name: str, queues: list[str], started_at: float, slots: int | None = None) -> WorkerBeat:
    """This process as a worker: its pool processes, queues, the GPU it is pinned to and its concurrency."""
    arch = next((m.group(1) for q in queues if (m := _GPU_QUEUE.match(q))), None)
    pid = os.getpid()
    return WorkerBeat(
        name=name,
        hostname=socket.gethostname(),
        pid=pid,
        pids=[pid, *children(pid)],
        queues=sorted(queues),
        gpu_uuid=(os.environ.get("CUDA_VISIBLE_DEVICES") or None) if arch else None,
        gpu=os.environ.get(internal_env.WORKER_GPU),
        arch=arch,
        slots=slots,
        started_at=started_at,
        beat_at=time.time(),
    )


class WorkerHeartbeat(threading.Thread):
    """Publishes this worker's heartbeat every `worker_beat_s` (TTL `worker_ttl_s`) until stopped."""

    def __init__(self, settings: Settings, name: str, queues: list[str], slots: int | None = None) -> None:
        super().__init__(name="cuprobe-registry-heartbeat", daemon=True)
        self.settings, self.worker_name, self.queues, self.slots = settings, name, queues, slots
        self.started_at = time.time()
        self.stopped = threading.Event()
        self._conn = client(settings)

    def beat(self) -> None:
        beat = describe(self.worker_name, self.queues, self.started_at, self.slots)
        publish(self._conn, beat, self.settings.worker_ttl_s)

    def run(self) -> None:
        while True:
            try:
                self.beat()
            except redis.RedisError as exc:  # Redis restarting: the next beat republishes
                log.warning("worker heartbeat not published: %s", exc)
            if self.stopped.wait(self.settings.worker_beat_s):
                break
        with contextlib.suppress(redis.RedisError):  # the key expires on its own
            withdraw(self._conn, self.worker_name)

    def stop(self) -> None:
        self.stopped.set()
        self.join(self.settings.registry_timeout_s * 3)
