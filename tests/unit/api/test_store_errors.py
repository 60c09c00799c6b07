"""A store that is down or locked: the API answers its JSON error body with 503, within the store timeout."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from fastapi.testclient import TestClient

from cuprobe.service.api import create_app
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store


def test_locked_sqlite_store_is_a_json_503_within_the_bound(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    settings = Settings(
        data_dir=tmp_path, database_url=f"sqlite:///{db}", broker_url="redis://127.0.0.1:1/0", store_timeout_s=1
    )
    client = TestClient(create_app(settings, reconciler=False), raise_server_exceptions=False)
    assert client.get("/jobs").status_code == 200  # positive control: the store answers
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    try:
        started = time.monotonic()
        response = client.post("/jobs", json={"probe": "selftest"})
        elapsed = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"].startswith("the store is unavailable (OperationalError)")
    assert elapsed < 5, f"took {elapsed:.1f} s"


def test_unreachable_postgresql_store_is_a_json_503(tmp_path: Path) -> None:
    """The API was started against a store that then went away (nothing listens on the port any more)."""
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'db.sqlite'}", store_timeout_s=2)
    client = TestClient(create_app(settings, reconciler=False), raise_server_exceptions=False)
    client.app.state.store = Store("postgresql+psycopg://postgres@127.0.0.1:1/gone", timeout_s=2)  # type: ignore[attr-defined]
    started = time.monotonic()
    response = client.get("/jobs")
    assert response.status_code == 503 and response.json()["error"].startswith("the store is unavailable")
    assert time.monotonic() - started < 5


def test_health_is_not_ok_while_store_writes_fail(tmp_path: Path) -> None:
    """A lock held on the SQLite file: reads answer, every submit is a 503, and /health said ok throughout."""
    db = tmp_path / "db.sqlite"
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{db}",
        broker_url="redis://127.0.0.1:1/0",
        store_timeout_s=1,
        registry_refresh_s=0,
    )
    client = TestClient(create_app(settings, reconciler=False), raise_server_exceptions=False)
    before = client.get("/health").json()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert client.post("/jobs", json={"probe": "selftest"}).status_code == 503
        started = time.monotonic()
        during = client.get("/health")
        elapsed = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert during.status_code == 503 and during.json()["store"].startswith("writes failing: OperationalError")
    assert elapsed < 3, f"/health took {elapsed:.1f} s under the lock"
    after = client.get("/health").json()  # the lock is gone: its write goes through again
    assert after["store"] == before["store"] == "ok", (before, after)
