"""What a user meets on a real stack: status text that matches the state, a cancel that stops the probe within
2 s with one true message (at the default heartbeat), and any unique prefix of a job id accepted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from cuprobe.service.config import Settings
from cuprobe.service.db.tables import Job
from cuprobe.service.queue.submit import JobSpec, create
from tests.cli_app import cli_app
from tests.integration.stack import Stack, wait_for, wait_running
from tests.processes import processes_mentioning
from tests.redis_dbs import claim

cli = CliRunner()


@pytest.fixture(scope="module")
def default_heartbeat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, httpx.Client]]:
    """A stack whose worker keeps the default 5 s heartbeat (the shared test stacks use 0.5 s)."""
    db = claim()
    data = tmp_path_factory.mktemp("heartbeat")
    beat = str(Settings.model_fields["heartbeat_s"].default)
    stack = Stack(
        "beat", broker_url=db.url, database_url=f"sqlite:///{data / 'c.db'}", data_dir=data,
        CUPROBE_HEARTBEAT_S=beat,
    )
    try:
        stack.start_worker(concurrency=1)
        yield stack, stack.start_api()
    finally:
        stack.stop()
        db.release()


def test_running_job_status_says_running_and_cancel_stops_it_within_2_s(
    default_heartbeat: tuple[Stack, httpx.Client],
) -> None:
    _, api = default_heartbeat
    job = api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "sleep", "seconds": 60}}).json()
    running = wait_running(api, job["id"])
    start = time.monotonic()
    while not processes_mentioning(job["id"]):
        assert time.monotonic() - start < 20, "the probe never started"
        time.sleep(0.05)
    shown = cli.invoke(cli_app(), ["status", job["id"][:8], "--url", str(api.base_url)])
    assert shown.exit_code == 4 and "running: attempt 1" in shown.stdout and "queued" not in shown.stdout
    assert running["message"] != "queued"
    asked = time.monotonic()
    stopped = cli.invoke(cli_app(), ["cancel", job["id"][:8], "--url", str(api.base_url)])
    done = wait_for(api, job["id"], timeout=10)
    elapsed = time.monotonic() - asked
    assert done["state"] == "cancelled" and done["exit_code"] == 3
    assert elapsed < 2.0, f"cancel took {elapsed:.2f} s"
    assert "stopped while running" in done["message"] and "process group" in done["message"]
    assert stopped.exit_code == 0 and stopped.stdout.count("cancel") == 1 and "cancelled: stopped" in stopped.stdout
    assert processes_mentioning(job["id"]) == []


def _job_with_id(stack: Stack, job_id: str) -> str:
    """A stored queued job with a chosen id (two of them share a prefix on purpose)."""
    made = create(JobSpec(probe="selftest", lane="sweep", deadline_s=3600), stack.store, stack.settings)
    with stack.store.session() as s:
        s.execute(update(Job).where(Job.id == made.id).values(id=job_id))
    return job_id


def test_any_unique_prefix_works_and_an_ambiguous_one_names_the_matches(
    default_heartbeat: tuple[Stack, httpx.Client], tmp_path: Path
) -> None:
    stack, api = default_heartbeat
    done = wait_for(api, api.post("/jobs", json={"probe": "selftest"}).json()["id"])
    url = str(api.base_url)
    for command in ("status", "results"):
        shown = cli.invoke(cli_app(), [command, done["id"][:8], "--url", url])
        assert shown.exit_code == 0 and done["id"] in shown.stdout
    a, b = _job_with_id(stack, "f" * 12 + "a" * 20), _job_with_id(stack, "f" * 12 + "b" * 20)
    ambiguous = api.get(f"/jobs/{'f' * 10}")
    assert ambiguous.status_code == 409 and a in ambiguous.text and b in ambiguous.text
    said = cli.invoke(cli_app(), ["status", "f" * 10, "--url", url])
    assert said.exit_code == 2 and "ambiguous" in said.stderr and a in said.stderr
    assert api.get(f"/jobs/{'f' * 12}a").json()["id"] == a
    for job_id in (a, b):
        api.post(f"/jobs/{job_id}/cancel")


def test_jobs_lists_with_filters(default_heartbeat: tuple[Stack, httpx.Client]) -> None:
    _, api = default_heartbeat
    job = wait_for(api, api.post("/jobs", json={"probe": "selftest", "params": {"behaviour": "violate"}}).json()["id"])
    url = str(api.base_url)
    listed = cli.invoke(cli_app(), ["jobs", "--outcome", "findings", "--tool", "none", "--url", url, "--limit", "5"])
    assert listed.exit_code == 0 and job["id"][:8] in listed.stdout and "findings" in listed.stdout
    other = cli.invoke(cli_app(), ["jobs", "--outcome", "clean", "--probe", "uninit-read", "--url", url])
    assert other.exit_code == 0 and job["id"][:8] not in other.stdout
    labelled = wait_for(api, api.post("/jobs", json={"probe": "selftest", "label": "sweep:cli-test"}).json()["id"])
    mine = cli.invoke(cli_app(), ["jobs", "--label", "sweep:cli-test", "--url", url])
    assert mine.exit_code == 0 and labelled["id"][:8] in mine.stdout and job["id"][:8] not in mine.stdout
    # More jobs than --limit: the list says so, and how to see them; all that match: nothing more to say.
    wait_for(api, api.post("/jobs", json={"probe": "selftest", "label": "sweep:cli-test"}).json()["id"])
    two = cli.invoke(cli_app(), ["jobs", "--label", "sweep:cli-test", "--limit", "1", "--url", url])
    assert two.exit_code == 0 and labelled["id"][:8] not in two.stdout
    said = " ".join(two.stderr.split())
    assert "the 1 newest shown; more jobs match: `--limit 5` shows more, or narrow them with --probe" in said
    every = cli.invoke(cli_app(), ["jobs", "--label", "sweep:cli-test", "--limit", "2", "--url", url])
    assert labelled["id"][:8] in every.stdout and "more jobs match" not in every.stderr
