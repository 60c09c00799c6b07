"""POST /jobs on a real broker (the embedded Valkey) and a real SQLite store, with no worker: bad requests get a 4xx
naming the field and store nothing; a good one is stored queued on the queue its admission names, and sent there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from cuprobe.service.api import create_app
from cuprobe.service.cli.embedded import embedded_broker
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.queue.broker import WAITING, held_jobs


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with embedded_broker(tmp_path_factory.mktemp("valkey")) as url:
        yield url


@pytest.fixture
def api(broker: str, tmp_path: Path) -> Iterator[TestClient]:
    redis.Redis.from_url(broker).flushdb()
    settings = Settings(broker_url=broker, data_dir=tmp_path, max_request_bytes=4096)
    with TestClient(create_app(settings, reconciler=False)) as client:
        yield client


def _store(api: TestClient) -> Store:
    store: Store = api.app.state.store  # type: ignore[attr-defined]
    return store


def _job_count(api: TestClient) -> int:
    return len(_store(api).jobs(limit=1000))


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"probe": "no-such-probe"}, "probe", "unknown probe 'no-such-probe'"),
        ({"probe": "Not A Name"}, "probe", "pattern"),
        ({"probe": "selftest", "params": []}, "params", "dictionary"),
        ({"probe": "selftest", "params": {"seconds": "soon"}}, "params.seconds", "takes a number"),
        ({"probe": "selftest", "tool": "valgrind"}, "tool", "'initcheck'"),
        ({"probe": "determinism", "tool": "memcheck"}, "tool", "does not run under memcheck"),
        ({"probe": "selftest", "timeout_s": 100_000}, "timeout_s", "less than or equal"),
    ],
)
def test_a_bad_request_is_422_naming_the_field_and_stores_nothing(
    api: TestClient, body: dict[str, Any], field: str, says: str
) -> None:
    response = api.post("/jobs", json=body)
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["field"] == field and says in error["error"], error
    assert _job_count(api) == 0


def test_an_oversized_body_is_413_naming_the_body(api: TestClient) -> None:
    response = api.post("/jobs", json={"probe": "selftest", "params": {"pad": "x" * 5000}})
    assert response.status_code == 413
    assert response.json()["field"] == "body" and "larger than this server's limit of 4096 bytes" in response.text
    assert _job_count(api) == 0


@pytest.mark.parametrize(
    ("body", "queue"),
    [
        ({"probe": "selftest"}, "cpu"),
        ({"probe": "determinism"}, "gpu.sm90"),  # device cuda at its defaults
        ({"probe": "determinism", "params": {"device": "cpu"}}, "cpu"),
        ({"probe": "gradcheck", "tool": "memcheck", "params": {"device": "cpu"}, "lane": "sweep"}, "gpu.sm90.sweep"),
        ({"probe": "uninit-read", "arch": "sm100"}, "gpu.sm100"),
    ],
)
def test_a_good_request_is_202_stored_queued_and_sent_to_its_queue(
    api: TestClient, broker: str, body: dict[str, Any], queue: str
) -> None:
    response = api.post("/jobs", json=body)
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    stored = _store(api).get(job_id)
    assert stored is not None and (stored.state, stored.queue) == ("queued", queue)
    assert stored.enqueued_at is not None  # the broker took it
    assert held_jobs(redis.Redis.from_url(broker), {queue}) == {job_id: WAITING}
