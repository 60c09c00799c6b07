"""Alembic migrations for the store; `upgrade(engine)` brings a database to the latest schema."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Engine

HERE = Path(__file__).parent


def alembic_config(engine: Engine) -> Config:
    """An Alembic config for this package's scripts, bound to `engine` (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(HERE))
    config.set_main_option(
        "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
    )
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    command.upgrade(alembic_config(engine), revision)
