"""A batched run reports one defect in many cases: the worker stores every (signature, case) once, or says why not.

A narrow-matmul job of 13 values of n x 3 variants in one process has 10 findings with one signature in 10 cases;
a store that kept findings unique per (job, signature) refused them, and the job was re-run until it ended `crashed`
for a worker that never died. Here that run is replayed from its H200 capture through execute_job into SQLite and
PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.models import Finding, Outcome, RunResult, Tool
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.queue.submit import JobSpec, create
from cuprobe.service.sanitizer.locate import _version
from cuprobe.service.worker.execute import execute_job
from tests.conftest import RUNS

CAPTURE = RUNS / "narrow-matmul-initcheck-2026.4.0.0"
REPLAY = Path(__file__).resolve().parents[1] / "replay" / "compute-sanitizer"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    url = f"sqlite:///{tmp_path / 'c.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_schema_url")
    s = Store(url)
    s.migrate()
    return s


@pytest.fixture
def replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The H200 run played back; this machine has no GPU, the capture came from one (the only mock here)."""
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))
    _version.cache_clear()
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(CAPTURE))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "0")


def _params() -> dict[str, object]:
    return dict(json.loads((CAPTURE / "result.json").read_text())["params"])


def test_one_signature_in_ten_cases_is_ten_stored_findings(store: Store, tmp_path: Path, replayed: None) -> None:
    settings = Settings(sanitizer_path=REPLAY, data_dir=tmp_path)
    job = create(JobSpec(probe="narrow-matmul", tool=Tool.INITCHECK, params=_params()), store, settings)
    report = execute_job(job.id, store=store, settings=settings)
    assert report.stored and report.outcome == "findings"
    done = store.get(job.id)
    assert done is not None and done.state == "done" and done.outcome == "findings"
    findings = store.findings(job.id)
    assert len({f.signature for f in findings}) == 1
    by_case = {f.case: f.count for f in findings}
    # Only the unguarded kernel reads padding: (n_pad - n) * k records per case, k = 32, one row of blocks.
    expected = {f"unguarded-n{n}": (-(-n // 32) * 32 - n) * 32 for n in (1, 2, 3, 4, 8, 31, 33, 63, 65, 127)}
    assert by_case == expected
    assert sum(by_case.values()) == 6624  # the sanitizer's ERROR SUMMARY on the H200


def test_a_result_the_store_refuses_ends_probe_error_saying_why(
    pg_schema_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(pg_schema_url)  # SQLite does not enforce VARCHAR lengths: it would store this result as it is
    store.migrate()
    settings = Settings(data_dir=tmp_path)
    job = create(JobSpec(probe="selftest"), store, settings)
    long_case = "c" * 600  # longer than findings.case_id holds
    refused = RunResult(
        probe="selftest",
        tool=Tool.NONE,
        outcome=Outcome.FINDINGS,
        message="1 violated expectation",
        findings=[Finding(signature="s", tool=Tool.NONE, kind="expectation-violation", message="m", case=long_case)],
    )
    monkeypatch.setattr(runner, "run_probe", lambda *a, **k: refused)  # a result no probe here produces
    report = execute_job(job.id, store=store, settings=settings)
    assert report.outcome == "probe_error" and report.stored
    done = store.get(job.id)
    assert done is not None and done.state == "done" and done.outcome == "probe_error"
    assert "could not store this run's result" in done.message and "ended findings with 1 finding" in done.message
    assert store.findings(job.id) == []
