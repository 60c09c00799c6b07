"""Word that a job ended, over Redis pub/sub: a held `GET /jobs/{id}?wait_s=` answers as soon as its job ends, a held
`POST /jobs/wait` as soon as one of its jobs does.

The word is a hint, never the truth: whoever hears it reads the job from the store, and a waiter that hears
nothing (Redis down, a job ended by the reconciler) still reads the store every `recheck_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator

import redis

from cuprobe.service.config import Settings
from cuprobe.service.queue.registry import client

log = logging.getLogger(__name__)
CHANNEL_PREFIX = "cuprobe:job-ended:"
# Pub/sub channels are shared by every database of a Redis server: the channel names the broker's database.
RECONNECT_S = 1.0


def channel(conn: redis.Redis) -> str:
    return f"{CHANNEL_PREFIX}{conn.connection_pool.connection_kwargs.get('db', 0)}"


class EndAnnouncer:
    """Publishes that a job ended (a worker after storing its result, the API after a cancel); best effort."""

    def __init__(self, settings: Settings) -> None:
        self._conn = client(settings)
        self._channel = channel(self._conn)

    def __call__(self, job_id: str) -> None:
        try:
            self._conn.publish(self._channel, job_id)
        except redis.RedisError as exc:  # waiters read the store on their own every recheck_s
            log.warning("could not announce that job %s ended: %s", job_id, exc)


class EndListener:
    """One subscription per API process; each waiting request registers its job id and is woken on the word."""

    def __init__(self, settings: Settings) -> None:
        self._conn = client(settings)
        self._channel = channel(self._conn)
        self._lock = threading.Lock()
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self.subscribed = threading.Event()

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._listen, name="cuprobe-job-ended", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    @contextlib.contextmanager
    def watch(self, *job_ids: str) -> Iterator[asyncio.Event]:
        """An event set when word comes that any of `job_ids` ended (register before reading the jobs: no word is
        missed)."""
        self.start()
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            for job_id in job_ids:
                self._waiters.setdefault(job_id, []).append(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                for job_id in job_ids:
                    waiting = self._waiters.get(job_id, [])
                    if entry in waiting:
                        waiting.remove(entry)
                    if not waiting:
                        self._waiters.pop(job_id, None)

    def _wake(self, job_id: str) -> None:
        with self._lock:
            waiting = list(self._waiters.get(job_id, []))
        for loop, event in waiting:
            with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits any more
                loop.call_soon_threadsafe(event.set)

    def _listen(self) -> None:
        while not self._stopped.is_set():
            pubsub = self._conn.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call, unused-ignore]  # untyped before redis-py 8.2
            try:
                pubsub.subscribe(self._channel)
                self.subscribed.set()
                while not self._stopped.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message and message.get("type") == "message":
                        data = message["data"]
                        self._wake(data.decode() if isinstance(data, bytes) else str(data))
            except redis.RedisError as exc:  # Redis restarting: waiters fall back to reading the store
                self.subscribed.clear()
                log.warning("not hearing about ended jobs (%s); retrying in %.0f s", exc, RECONNECT_S)
                self._stopped.wait(RECONNECT_S)
            finally:
                with contextlib.suppress(redis.RedisError):
                    pubsub.close()
