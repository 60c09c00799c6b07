"""Which store errors are an outage (retry later) and which are a refusal (this row cannot be stored)."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout


def transient(exc: BaseException) -> bool:
    """True for a store that is down, locked or unreachable (SQLite "database is locked", PostgreSQL connection
    refused or dropped, pool exhausted); False for a constraint or type the store refuses."""
    if isinstance(exc, OperationalError | InterfaceError | DisconnectionError | PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def refused(exc: BaseException) -> bool:
    return isinstance(exc, SQLAlchemyError) and not transient(exc)
