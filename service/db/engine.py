"""The database: an engine for SQLite or PostgreSQL, sessions safe across forks, and migrations."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import CursorResult, Engine
from sqlalchemy.orm import Session, sessionmaker

from cuprobe.service.db.migrations import upgrade


def changed_rows(session: Session, statement: Any) -> int:
    """Rows an UPDATE changed (the compare-and-set succeeded when > 0)."""
    return cast(CursorResult[Any], session.execute(statement)).rowcount


def _sqlite_pragmas(timeout_s: float) -> Callable[[Any, Any], None]:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        # WAL and a busy timeout: the API and several workers write one SQLite file concurrently.
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return on_connect


def make_engine(url: str, timeout_s: float = 30.0) -> Engine:
    """An engine for `url` whose calls give up after about `timeout_s` when the store is locked or unreachable;
    SQLite files get WAL and a busy timeout, PostgreSQL a pre-ping pool and a connect timeout."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": timeout_s, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas(timeout_s))
        return engine
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_timeout=timeout_s,
        connect_args={"connect_timeout": max(2, int(timeout_s))},
    )


WRITES = ("INSERT", "UPDATE", "DELETE")


class WriteHealth:
    """Whether this process's last write to the store failed (a lock held past the timeout, a read-only or full
    database) with no write committed since: reads alone can answer while every write fails."""

    def __init__(self, engine: Engine) -> None:
        self.failed: str | None = None
        event.listen(engine, "after_cursor_execute", self._wrote)
        event.listen(engine, "commit", self._committing)
        event.listen(engine, "handle_error", self._error)

    def _wrote(self, conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith(WRITES):
            conn.info["wrote"] = True

    def _committing(self, conn: Any) -> None:
        if conn.info.pop("wrote", False):
            self.failed = None  # a failing commit comes back through _error

    def _error(self, context: Any) -> None:
        statement = context.statement
        if statement is None or statement.lstrip().upper().startswith(WRITES):  # None: the commit itself
            error = context.original_exception
            self.failed = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:300]}"


class Database:
    """An engine and its sessions; forked children (Celery prefork) open connections of their own."""

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self.url = url
        self.engine = make_engine(url, timeout_s)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._pid = os.getpid()
        self.writes = WriteHealth(self.engine)
        self._timeout_s = timeout_s

    def try_write(self, within_s: float = 0.5) -> None:
        """A write that changes nothing (it takes the write lock all the same), given up after about `within_s`: how
        /health learns that writes work again after one failed. Raises the store's error when they do not."""
        sqlite = self.engine.dialect.name == "sqlite"
        with self.engine.connect() as conn:
            try:
                with conn.begin():
                    if sqlite:
                        conn.exec_driver_sql(f"PRAGMA busy_timeout={int(within_s * 1000)}")
                    else:
                        conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(within_s * 1000)}")
                    conn.execute(text("UPDATE jobs SET id = id WHERE 1 = 0"))
            finally:
                if sqlite:
                    conn.exec_driver_sql(f"PRAGMA busy_timeout={int(self._timeout_s * 1000)}")

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
