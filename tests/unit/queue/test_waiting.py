"""Waiting for jobs: each ended job comes back once, as it ends; a job's result reads back with its findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.db.store import JobState, Store
from cuprobe.service.models import Finding, Outcome, RunResult, Tool
from cuprobe.service.queue import waiting
from cuprobe.service.queue.submit import JobSpec, create
from cuprobe.service.queue.waiting import ended, job_fields, poll, result_of_job


def test_poll_yields_each_job_once_as_it_ends() -> None:
    states = {"a": ["queued", "running", "done"], "b": ["cancelled"], "c": ["running", "running", "running", "done"]}
    seen: list[list[str]] = []
    finished = list(
        poll(
            states,
            lambda key: states[key].pop(0),
            ended,
            poll_s=0,
            progress=lambda pending: seen.append(sorted(pending)),
        )
    )
    assert finished == [("b", "cancelled"), ("a", "done"), ("c", "done")]
    assert seen == [["a", "c"], ["a", "c"], ["c"], []]


class FakeClock:
    """time.monotonic and time.sleep of the waiting module, on a clock that only the test moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_poll_reads_once_per_poll_s_and_at_once_after_a_read_the_server_held(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(waiting, "time", clock)
    answers = iter([(0.1, "running"), (0.5, "running"), (0.5, "running"), (0.2, "done")])

    def read(_key: str) -> str:
        took, state = next(answers)
        clock.now += took  # a quick GET, then GETs held by the server for the whole poll_s
        return state

    assert list(poll(["a"], read, ended, poll_s=0.5)) == [("a", "done")]
    assert clock.slept == [0.4, 0.0, 0.0]


def test_a_stored_result_reads_back_with_its_findings_and_a_missing_one_says_why(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    settings = Settings()
    job = create(JobSpec(probe="selftest"), store, settings)
    assert store.claim(job.id, "w", max_attempts=3, stale_after_s=60, job_dir=str(tmp_path)).verdict.value == "run"
    finding = Finding(signature="none|expectation-violation|selftest|c", tool=Tool.NONE, kind="k", message="m", count=1)
    result = RunResult(
        probe="selftest", tool=Tool.NONE, outcome=Outcome.FINDINGS, message="1 finding", findings=[finding]
    )
    store.finish(job.id, 1, result)
    stored = store.get(job.id)
    assert stored is not None and stored.state == JobState.DONE
    read = result_of_job(job_fields(stored), store.findings(job.id), probe="selftest", tool=Tool.NONE)
    assert read.outcome is Outcome.FINDINGS and [f.signature for f in read.findings] == [finding.signature]

    cancelled = {"id": "j2", "state": "cancelled", "outcome": None, "message": "cancelled by the user", "result": None}
    missing = result_of_job(cancelled, [], probe="selftest", tool=Tool.NONE)
    assert missing.outcome is Outcome.PROBE_ERROR and missing.message == "job j2 ended cancelled: cancelled by the user"
    gone = result_of_job(None, [], probe="selftest", tool=Tool.NONE)
    assert gone.outcome is Outcome.PROBE_ERROR and "vanished" in gone.message
