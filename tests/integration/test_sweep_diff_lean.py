"""A diff read lean from the store (columns and JSON paths) equals the diff of the fully loaded sweeps, on SQLite and
PostgreSQL: fallout is read from each finding's JSON and left out, messages of cases that could not run are kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.service.db.store import Store
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.sweep.diff import diff
from tests.seed_store import seed_sweeps


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_lean_diff_equals_the_full_diff(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}" if backend == "sqlite" else request.getfixturevalue("pg_schema_url")
    store = Store(url)
    store.migrate()
    ids = seed_sweeps(store, sweeps=4, cases=48)
    sweeps = SweepStore(store)
    kinds = set()
    for sweep_id in ids:
        full = sweeps.get(sweep_id)
        assert full is not None
        expected = diff(full, sweeps.previous(full))
        lean = sweeps.for_diff(sweep_id)
        assert lean is not None
        previous = sweeps.previous_id(lean)
        assert diff(lean, sweeps.for_diff(previous) if previous else None) == expected
        kinds |= {part for part in ("new", "fixed", "persisting", "flaky", "unverified") if getattr(expected, part)}
    assert kinds == {"new", "fixed", "persisting", "flaky", "unverified"}  # the seed exercises every kind
    assert any(f.fallout for c in full.cases for f in c.findings)  # and a fallout finding the diff leaves out
    store.engine.dispose()
