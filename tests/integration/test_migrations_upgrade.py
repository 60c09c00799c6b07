"""Upgrading a store that holds data: 0001 -> head and 0003 -> head on SQLite and PostgreSQL keep every row."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from cuprobe.service.db.history import finding_history
from cuprobe.service.db.migrations import upgrade
from cuprobe.service.db.store import FindingRow, Job, Store
from cuprobe.service.db.tables import SweepFindingRow
from cuprobe.service.models import Finding, Tool, signature_key


def _finding(signature: str, case: str | None) -> Finding:
    return Finding(signature=signature, tool=Tool.INITCHECK, kind="uninitialized-global-read", message="m", case=case)


def _store_at(url: str, revision: str) -> Store:
    store = Store(url)
    upgrade(store.engine, revision)
    return store


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0002_keeps_stored_findings_and_allows_one_signature_in_many_cases(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}" if backend == "sqlite" else request.getfixturevalue("pg_schema_url")
    old = _store_at(url, "0001")
    with old.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO jobs (id, probe, tool, request, queue, lane, state, message, created_at, deadline_at,"
                " attempts, enqueues, cancel_requested) VALUES ('j1', 'uninit-read', 'initcheck', '{}', 'gpu.sm90',"
                " 'gate', 'done', '', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 1, 1, false)"
            )
        )
        connection.execute(
            text(
                "INSERT INTO findings (job_id, signature, tool, kind, count, finding)"
                " VALUES ('j1', 'sig', 'initcheck', 'k', 24, :finding)"
            ),
            {"finding": _finding("sig", None).model_dump_json()},
        )
    old.engine.dispose()
    store = Store(url)
    store.migrate()
    with store.session() as s:
        rows = s.scalars(select(FindingRow)).all()
        assert [(r.job_id, r.signature, r.case_id, r.count) for r in rows] == [("j1", "sig", "", 24)]
        # A batched run: the same defect in two cases is two rows; the same (signature, case) twice is refused.
        s.add_all(
            [
                FindingRow(
                    job_id="j1",
                    signature="sig",
                    case_id="unguarded-n1",
                    tool="initcheck",
                    kind="k",
                    count=1,
                    finding=_finding("sig", "unguarded-n1").model_dump(mode="json"),
                ),
                FindingRow(
                    job_id="j1",
                    signature="sig",
                    case_id="unguarded-n2",
                    tool="initcheck",
                    kind="k",
                    count=2,
                    finding=_finding("sig", "unguarded-n2").model_dump(mode="json"),
                ),
            ]
        )
    with pytest.raises(IntegrityError), store.session() as s:
        s.add(
            FindingRow(
                job_id="j1", signature="sig", case_id="unguarded-n2", tool="initcheck", kind="k", count=2, finding={}
            )
        )
    assert len(store.findings("j1")) == 3


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_0004_names_every_stored_finding_by_its_signature_key(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}" if backend == "sqlite" else request.getfixturevalue("pg_schema_url")
    old = _store_at(url, "0003")
    with old.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO jobs (id, probe, tool, request, queue, lane, state, message, created_at, deadline_at,"
                " attempts, enqueues, cancel_requested) VALUES ('j1', 'uninit-read', 'initcheck', '{}', 'gpu.sm90',"
                " 'gate', 'done', '', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 1, 1, false)"
            )
        )
        for signature in ("sig-a", "sig-b"):
            connection.execute(
                text(
                    "INSERT INTO findings (job_id, signature, tool, kind, case_id, count, finding)"
                    " VALUES ('j1', :signature, 'initcheck', 'k', '', 1, :finding)"
                ),
                {"signature": signature, "finding": _finding(signature, None).model_dump_json()},
            )
        connection.execute(
            text(
                "INSERT INTO sweeps (id, definition, state, started_at, summary)"
                " VALUES ('w1', 'nightly', 'done', CURRENT_TIMESTAMP, '{}')"
            )
        )
        connection.execute(
            text(
                "INSERT INTO sweep_findings (sweep_id, case_key, signature, count, finding)"
                " VALUES ('w1', 'case', 'sig-a', 3, :finding)"
            ),
            {"finding": _finding("sig-a", None).model_dump_json()},
        )
    old.engine.dispose()
    store = Store(url)
    store.migrate()
    with store.session() as s:
        keys = dict(s.execute(select(FindingRow.signature, FindingRow.signature_key)).all())
        sweep_keys = list(s.execute(select(SweepFindingRow.signature, SweepFindingRow.signature_key)).all())
        labels = list(s.scalars(select(Job.label)))
    assert keys == {"sig-a": signature_key("sig-a"), "sig-b": signature_key("sig-b")}
    assert sweep_keys == [("sig-a", signature_key("sig-a"))] and labels == [None]
    history = finding_history(store, signature_key("sig-a"))
    assert history is not None and (history.jobs.distinct, history.sweeps.distinct) == (1, 1)
