"""Alembic environment: runs migrations on the engine `service.db.migrations.upgrade` passes in."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from cuprobe.service.db.store import Base

config = context.config
engine = config.attributes.get("engine") or create_engine(config.get_main_option("sqlalchemy.url") or "")

with engine.begin() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
