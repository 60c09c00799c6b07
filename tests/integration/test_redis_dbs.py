"""The test stacks' Redis databases: claimed only when empty, flushed only while theirs; others' data survives."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cuprobe.service.cli.embedded import embedded_broker
from tests import redis_dbs
from tests.integration.stack import REPO, fresh_stack
from tests.redis_dbs import OWNER_KEY, claim


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A Redis-protocol server of this test's own, standing in for a loopback Redis shared with other people."""
    with embedded_broker(tmp_path / "valkey") as url:
        yield url.rsplit("/", 1)[0]


def _foreign(base: str, dbs: range) -> dict[int, redis.Redis]:
    """Someone else's data in each of `dbs` (no owner key: not a test run's)."""
    clients = {db: redis.Redis.from_url(f"{base}/{db}") for db in dbs}
    for db, client in clients.items():
        client.set("their:data", f"kept {db}")
    return clients


def test_a_stack_takes_an_empty_database_and_leaves_everyone_elses_data(
    server: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_dbs, "REDIS", server)
    theirs = _foreign(server, range(0, 15))  # databases 0-14 hold other people's keys; 15 is empty
    with fresh_stack(tmp_path_factory, "owned") as stack:
        assert stack.settings.broker_url == f"{server}/15"
        redis.Redis.from_url(stack.settings.broker_url).set("mine", "1")
    assert redis.Redis.from_url(f"{server}/15").dbsize() == 0  # ours, emptied on the way out
    assert {db: c.get("their:data") for db, c in theirs.items()} == {db: f"kept {db}".encode() for db in range(15)}


def test_a_flush_is_refused_once_the_database_is_no_longer_ours(server: str) -> None:
    db = claim(server)
    db.client.set(OWNER_KEY, "another run")
    db.client.set("their:data", "1")
    with pytest.raises(RuntimeError, match="no longer this test run's: not flushed"):
        db.flush()
    db.release()
    assert db.client.get("their:data") == b"1"


def test_a_claim_left_by_a_test_run_that_died_is_taken_over(server: str) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = redis.Redis.from_url(f"{server}/1")
    left.set(OWNER_KEY, f"{redis_dbs.socket.gethostname()} {dead.pid} gone")
    left.set("celery", "left over")
    db = claim(server)
    assert db.db == 1 and db.owned() and left.get("celery") is None


def test_when_every_database_is_taken_a_private_server_serves_the_claim(server: str) -> None:
    _foreign(server, range(1, 16))
    db = claim(server)
    assert not db.url.startswith(f"{server}/") and db.owned()
    db.release()


def test_without_a_redis_the_claim_is_served_by_a_private_server() -> None:
    db = claim("redis://127.0.0.1:1")  # nothing listens there
    assert db.owned() and not db.url.startswith("redis://127.0.0.1:1/")
    db.release()


def test_without_postgresql_its_tests_skip_saying_what_to_install_unless_ci_requires_it() -> None:
    test = "tests/integration/test_sweep_beat.py::test_sweeps_round_trip_through_postgres"
    nothing = "postgresql://postgres@127.0.0.1:1/test"  # nothing listens there
    env = {**os.environ, "CUPROBE_TEST_POSTGRES": nothing, "CUPROBE_REQUIRE_POSTGRES": ""}
    argv = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", test]
    skipped = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert "1 skipped" in skipped.stdout and "PostgreSQL does not answer at" in skipped.stdout, skipped.stdout
    required = subprocess.run(
        argv, cwd=REPO, env={**env, "CUPROBE_REQUIRE_POSTGRES": "1"}, capture_output=True, text=True, timeout=300
    )
    assert required.returncode == 1 and "must run here (CUPROBE_REQUIRE_POSTGRES=1)" in required.stdout
