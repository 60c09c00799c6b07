"""A job or sweep id, or any unique prefix of one, names it, on SQLite and PostgreSQL: an ambiguous prefix names
(at most ten of) the ids it starts, a missing id or a LIKE wildcard names nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import update

from cuprobe.service.config import Settings
from cuprobe.service.db.id_prefix import MATCHES_SHOWN, Ambiguous, by_id_prefix
from cuprobe.service.db.store import Job, Store
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.queue.submit import JobSpec, create


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'c.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_schema_url")
    s = Store(url)
    s.migrate()
    yield s
    s.engine.dispose()


def _job(store: Store, job_id: str) -> str:
    made = create(JobSpec(probe="selftest"), store, Settings())
    with store.session() as s:
        s.execute(update(Job).where(Job.id == made.id).values(id=job_id))
    return job_id


def test_a_job_is_found_by_its_id_or_a_unique_prefix_and_an_ambiguous_one_names_the_matches(store: Store) -> None:
    only = _job(store, "0123456789abcdef")
    twins = [_job(store, f"abcd{n}000") for n in (1, 2)]
    many = sorted(_job(store, f"ee{n:02d}ffff") for n in range(MATCHES_SHOWN + 2))

    def find(given: str) -> Job | Ambiguous | None:
        return by_id_prefix(given, store.get, store.ids_starting)

    exact, short = find(only), find(only[:5])
    assert isinstance(exact, Job) and exact.id == only
    assert isinstance(short, Job) and short.id == only
    pair = find("abcd")
    assert isinstance(pair, Ambiguous) and sorted(pair.matches) == twins and not pair.more
    capped = find("ee")
    assert isinstance(capped, Ambiguous) and capped.more and len(capped.matches) == MATCHES_SHOWN
    assert set(capped.matches) < set(many)
    second = find("abcd2")
    assert isinstance(second, Job) and second.id == twins[1]
    for shouted in ("ABCD2", only.upper(), only[:5].upper()):  # the same rows on both stores, whatever the case
        found = find(shouted)
        assert isinstance(found, Job) and found.id.startswith(shouted.lower()), shouted
    for nothing in ("9999", "", "%", "_bcd", only + "0"):
        assert find(nothing) is None, nothing


def test_a_sweep_is_found_by_a_unique_prefix_and_an_ambiguous_one_names_both(store: Store) -> None:
    sweeps = SweepStore(store)
    for sweep_id in ("5a5a0001", "5a5b0001", "5a5b0002"):
        sweeps.start(sweep_id, "nightly")
    short = by_id_prefix("5a5a", sweeps.get, sweeps.ids_starting)
    assert short is not None and not isinstance(short, Ambiguous) and short.id == "5a5a0001"
    both = by_id_prefix("5a5b", sweeps.get, sweeps.ids_starting)
    assert isinstance(both, Ambiguous) and sorted(both.matches) == ["5a5b0001", "5a5b0002"] and not both.more
    assert by_id_prefix("5a5c", sweeps.get, sweeps.ids_starting) is None
