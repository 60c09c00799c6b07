"""A scheduled sweep whose CPU worker process is killed while its jobs run is resumed from those jobs by the next
maintenance pass, on a real Celery worker, real Redis and a SQLite store: stored done, every case's outcome as if
it had not stopped, no job sent twice."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from cuprobe.service.db.owner import this_process
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.db.tables import SweepRow
from cuprobe.service.models import Outcome
from cuprobe.service.models.queues import CPU
from cuprobe.service.queue.broker import enqueue
from cuprobe.service.queue.celery_app import TASK_RECONCILE, TASK_RUN_SWEEP, make_celery
from cuprobe.service.queue.submit import submit
from cuprobe.service.sweep.adopt import sweep_label
from cuprobe.service.sweep.definition import load_definition
from cuprobe.service.sweep.execute import requests_of
from cuprobe.service.sweep.plan import plan
from cuprobe.service.sweep.schedule import running_key
from cuprobe.service.sweep.scheduled import resume, scheduled_runner
from tests.integration.stack import Stack, fresh_stack

# Three processes (selftest runs each case alone); `sleep` keeps the sweep waiting long enough to be killed.
DEFINITION = (
    'name = "resume-test"\n[[entry]]\nprobe = "selftest"\ntool = "none"\nparams = { seconds = 4.0 }\n'
    'grid = { behaviour = ["sleep", "violate", "ok"] }\n'
)
EXPECTED = {"sleep": Outcome.CLEAN, "violate": Outcome.FINDINGS, "ok": Outcome.CLEAN}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with fresh_stack(tmp_path_factory, "resume") as stack:
        stack.start_worker(concurrency=2)
        yield stack


def _until(what: str, check: Callable[[], Any], timeout_s: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        assert time.monotonic() < deadline, f"waited {timeout_s:.0f} s for {what}"
        time.sleep(0.2)
    return found


def _outcomes(sweeps: SweepStore, sweep_id: str) -> dict[str, Outcome]:
    sweep = sweeps.get(sweep_id)
    assert sweep is not None
    return {case.key.rsplit("=", 1)[-1]: case.outcome for case in sweep.cases}


def test_a_sweep_whose_worker_process_was_killed_is_resumed_from_its_jobs(stack: Stack, tmp_path: Path) -> None:
    definition = tmp_path / "resume.toml"
    definition.write_text(DEFINITION)
    celery = make_celery(stack.settings)
    sweeps = SweepStore(stack.store)
    celery.send_task(TASK_RUN_SWEEP, args=[str(definition)], queue=CPU)

    def sent() -> tuple[str, list[str]] | None:
        rows = [r for r in sweeps.list("resume-test") if r.state == "running"]
        jobs = stack.store.jobs(label=sweep_label(rows[0].id)) if rows else []
        return (rows[0].id, [j.id for j in jobs]) if len(jobs) == 3 else None

    sweep_id, jobs = _until("the sweep to send its three jobs", sent)
    row = sweeps.row(sweep_id)
    assert row is not None and row.summary["resume"] == {"path": str(definition), "slots": 1}
    owner = row.summary["owner"]["pid"]
    os.kill(owner, signal.SIGKILL)  # the pool process waiting for the jobs, as an OOM kill or a cold shutdown would
    _until("the killed sweep to be known as ended", lambda: sweep_id in sweeps.orphans())
    waiting = sweeps.row(sweep_id)
    assert waiting is not None and waiting.state == "running"  # not failed: its jobs still run
    assert waiting.summary["message"].startswith("waiting to be resumed from its jobs by a CPU worker")
    # The killed process still holds the definition's lock until its TTL: the resume takes it over.
    assert redis.Redis.from_url(stack.settings.broker_url).get(running_key("resume-test")) is not None

    celery.send_task(TASK_RECONCILE, queue=CPU)  # beat sends this every reconcile interval
    done = _until("the resumed sweep to be stored", lambda: (r := sweeps.row(sweep_id)) and r.state != "running" and r)
    assert done.state == "done", done.summary
    assert _outcomes(sweeps, sweep_id) == EXPECTED
    message = done.summary["message"]
    assert message.startswith(f"resumed after its process (pid {owner} on ") and "3 job(s) it had sent taken back" in (
        message
    ) and "0 sent now" in message
    assert sorted(j.id for j in stack.store.jobs(label=sweep_label(sweep_id))) == sorted(jobs)  # none sent twice
    sweep = sweeps.get(sweep_id)
    assert sweep is not None and sweep.wall_s is not None and sweep.wall_s >= 4.0  # from when it began


def test_a_sweep_killed_while_sending_sends_only_the_jobs_it_had_not(stack: Stack, tmp_path: Path) -> None:
    """Resumed here (the task's own function), with one of its three jobs sent before its process ended."""
    definition = tmp_path / "resume.toml"
    definition.write_text(DEFINITION.replace("seconds = 4.0", "seconds = 0.5"))
    celery = make_celery(stack.settings)
    sweep_id, runner, resumable = scheduled_runner(
        definition, stack.store, stack.settings, lambda job: enqueue(celery, job), 1
    )
    sweeps = SweepStore(stack.store)
    sweeps.start(sweep_id, "resume-test", resumable)
    requests = [r for _, r in requests_of(plan(load_definition(definition), 1))]
    (first, *_) = runner.specs(requests)
    kept = submit(first, stack.store, stack.settings, lambda job: enqueue(celery, job)).id
    child = subprocess.Popen(["true"])
    child.wait()
    with stack.store.session() as s:  # its process: one of this host's that has ended
        row = s.get(SweepRow, sweep_id)
        assert row is not None
        row.summary = {**row.summary, "owner": {**this_process(), "pid": child.pid}}

    client = redis.Redis.from_url(stack.settings.broker_url)
    status, sweep = resume(client, stack.store, stack.settings, sweep_id, lambda job: enqueue(celery, job))
    assert status == "resumed" and sweep is not None and sweep.state == "done"
    assert _outcomes(sweeps, sweep_id) == EXPECTED
    assert "1 job(s) it had sent taken back, 2 sent now" in sweep.message
    labelled = stack.store.jobs(label=sweep_label(sweep_id))
    assert len(labelled) == 3 and kept in {j.id for j in labelled}
    # Done, it is no orphan: a second resume of it does nothing.
    client.delete(f"cuprobe:sweep:resume:{sweep_id}")
    assert resume(client, stack.store, stack.settings, sweep_id, print) == (
        "skipped: it is not a sweep whose process has ended",
        None,
    )
