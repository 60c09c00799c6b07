"""Integration fixtures: real Redis (a database of their own on 127.0.0.1:6379), real PostgreSQL and SQLite, real
workers."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.integration.stack import REPO, Stack
from tests.redis_dbs import OwnedDb, owned_db
from tests.system_packages import missing_package

# CUPROBE_TEST_POSTGRES names another server (trust auth for user postgres, a database the tests may add schemas to).
POSTGRES = os.environ.get("CUPROBE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
# With this set to 1 (CI), a PostgreSQL that does not answer fails the tests that need it instead of skipping them.
REQUIRE_POSTGRES = "CUPROBE_REQUIRE_POSTGRES"
FIGURES = REPO / "build" / "integration-figures.txt"

pytestmark = pytest.mark.integration


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


class Figures:
    """Numbers the failure tests measure: printed and appended to build/integration-figures.txt."""

    def __init__(self) -> None:
        FIGURES.parent.mkdir(exist_ok=True)
        FIGURES.write_text("")

    def record(self, test: str, **numbers: object) -> None:
        line = f"{test}: " + ", ".join(f"{k}={v}" for k, v in numbers.items())
        print(f"\nFIGURE {line}")
        with FIGURES.open("a") as f:
            f.write(line + "\n")


@pytest.fixture(scope="session")
def figures() -> Figures:
    return Figures()


def _pg_schema() -> Iterator[str]:
    """A URL whose search_path is a new schema of the `test` database, dropped afterwards."""
    schema = f"cuprobe_test_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(POSTGRES, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
    except psycopg.OperationalError as exc:
        missing_package(
            f"PostgreSQL does not answer at {POSTGRES} ({str(exc).strip().splitlines()[0]}): apt-get install -y "
            "postgresql and a database `test` with trust auth on loopback (as .ci/run does)",
            REQUIRE_POSTGRES,
        )
    yield POSTGRES.replace("postgresql://", "postgresql+psycopg://", 1) + f"?options=-csearch_path%3D{schema}"
    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    yield from _pg_schema()


@pytest.fixture
def redis_db() -> Iterator[OwnedDb]:
    """A Redis database of this test's own: claimed empty, given back emptied (never someone else's flushed)."""
    with owned_db() as db:
        yield db


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    """A PostgreSQL schema of this test's own."""
    yield from _pg_schema()


def _stack(name: str, database_url: str, data_dir: Path) -> Iterator[Stack]:
    with owned_db() as db:
        stack = Stack(name, broker_url=db.url, database_url=database_url, data_dir=data_dir)
        stack.start_worker()
        try:
            yield stack
        finally:
            stack.stop()


@pytest.fixture(scope="session")
def sqlite_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data = tmp_path_factory.mktemp("sqlite-stack")
    yield from _stack("sqlite", f"sqlite:///{data / 'cuprobe.db'}", data)


@pytest.fixture(scope="session")
def postgres_stack(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[Stack]:
    yield from _stack("postgres", pg_url, tmp_path_factory.mktemp("pg-stack"))


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def stack(request: pytest.FixtureRequest) -> Stack:
    found: Stack = request.getfixturevalue(f"{request.param}_stack")
    return found


@pytest.fixture(scope="session")
def api(stack: Stack) -> httpx.Client:
    """A client of the stack's API (one server per stack)."""
    if not hasattr(stack, "api_client"):
        stack.api_client = stack.start_api()  # type: ignore[attr-defined]
    client: httpx.Client = stack.api_client  # type: ignore[attr-defined]
    return client
