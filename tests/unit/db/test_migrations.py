"""The Alembic migrations build exactly the schema the ORM tables describe."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from cuprobe.service.db.store import Base, Store


def test_migrated_database_matches_the_tables(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    store.migrate()
    with store.engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == []


def test_migrate_twice_is_a_no_op(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    store.migrate()
    store.migrate()
    assert store.jobs() == []

