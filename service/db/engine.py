"""The database: an engine for SQLite or PostgreSQL, sessions safe across forks, and migrations."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import CursorResult, Engine
from sqlalchemy.orm import Session, sessionmaker

from service.db.migrations import upgrade


def changed_rows(session: Session, statement: Any) -> int:
    """Rows an UPDATE changed (the compare-and-set succeeded when > 0)."""
    return cast(CursorResult[Any], session.execute(statement)).rowcount


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL and a busy timeout: the API and several workers write one SQLite file concurrently.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite files get WAL and a busy timeout, PostgreSQL a pre-ping pool."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


class Database:
    """An engine and its sessions; forked children (Celery prefork) open connections of their own."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._pid = os.getpid()

    @contextmanager
    def session(self) -> Iterator[Session]:
        if os.getpid() != self._pid:  # forked (Celery prefork): never reuse the parent's connections
            self.engine.dispose(close=False)
            self._pid = os.getpid()
        with self._sessions.begin() as session:
            yield session

    def migrate(self) -> None:
        upgrade(self.engine)

    def ping(self) -> None:
        with self.session() as s:
            s.execute(text("SELECT 1"))
