"""Submit over HTTP -> a real worker runs the selftest probe -> outcome/findings stored -> read back."""

from __future__ import annotations

import time
from datetime import datetime

import httpx
import pytest
from typer.testing import CliRunner

from cuprobe.service.api.routes import jobs as job_routes
from cuprobe.service.db.store import JobState
from tests.cli_app import cli_app
from tests.integration.stack import Stack, wait_for


def submit(api: httpx.Client, **spec: object) -> dict:
    response = api.post("/jobs", json=spec)
    assert response.status_code == 202, response.text
    return response.json()


def test_clean_run_is_stored_and_read_back_over_http_and_cli(stack: Stack, api: httpx.Client) -> None:
    job = submit(api, probe="selftest", params={"behaviour": "ok"})
    # The response re-reads the job after enqueueing it: a fast worker may already have claimed it.
    assert job["state"] in ("queued", "running", "done") and job["queue"] == "cpu" and job["schema_version"] == 1
    done = wait_for(api, job["id"])
    assert (done["outcome"], done["exit_code"], done["findings"], done["attempts"]) == ("clean", 0, 0, 1)
    row = stack.store.get(job["id"])
    assert row is not None and row.state == JobState.DONE and row.outcome == "clean"
    assert len(stack.store.runs(job["id"])) == 1
    listed = api.get("/jobs", params={"probe": "selftest", "outcome": "clean"}).json()["jobs"]
    assert job["id"] in [j["id"] for j in listed]
    artifact = api.get(f"/jobs/{job['id']}/artifacts/result.json")
    assert artifact.status_code == 200 and artifact.json()["complete"] is True
    url = str(api.base_url)
    result = CliRunner().invoke(cli_app(), ["results", job["id"], "--url", url])
    assert result.exit_code == 0, result.output
    assert "clean" in result.output
    result = CliRunner().invoke(cli_app(), ["status", job["id"], "--url", url])
    assert result.exit_code == 0 and "clean" in result.output


def test_findings_are_stored_and_listed(stack: Stack, api: httpx.Client) -> None:
    job = submit(api, probe="selftest", params={"behaviour": "violate"})
    done = wait_for(api, job["id"])
    assert done["outcome"] == "findings" and done["exit_code"] == 1
    assert "violated" in done["message"]
    findings = api.get(f"/jobs/{job['id']}/findings").json()
    assert findings["schema_version"] == 1 and len(findings["findings"]) >= 1
    assert stack.store.findings(job["id"]) == [
        type(stack.store.findings(job["id"])[0]).model_validate(f) for f in findings["findings"]
    ]
    result = CliRunner().invoke(cli_app(), ["results", job["id"], "--url", str(api.base_url)])
    assert result.exit_code == 1, result.output
    assert "findings" in result.output


def test_cli_submit_wait_exits_with_the_outcome(api: httpx.Client) -> None:
    result = CliRunner().invoke(
        cli_app(), ["submit", "selftest", "-p", "behaviour=raise", "--wait", "--url", str(api.base_url)]
    )
    assert result.exit_code == 3, result.output
    assert "probe_error" in result.output


def test_gpu_probe_without_gpu_worker_ends_unavailable(api: httpx.Client) -> None:
    job = submit(api, probe="uninit-read", deadline_s=2)
    assert job["queue"] == "gpu.sm90"
    done = wait_for(api, job["id"], timeout=30)
    assert done["outcome"] == "unavailable" and done["exit_code"] == 3
    assert "gpu.sm90" in done["message"] and "cuprobe worker" in done["message"]


def test_gpu_probe_ends_unavailable_before_its_deadline_when_no_live_worker_serves_its_queue(stack: Stack) -> None:
    fast = stack.start_api(unserved_after_s=1.0)
    job = submit(fast, probe="uninit-read")  # the default deadline is minutes away
    started = time.monotonic()
    done = wait_for(fast, job["id"], timeout=60)
    assert done["outcome"] == "unavailable" and done["exit_code"] == 3
    assert "no worker serves queue gpu.sm90" in done["message"] and "cuprobe worker" in done["message"]
    assert time.monotonic() - started < 30  # long before the deadline (CUPROBE_QUEUE_DEADLINE_S=600 here)


def test_cancel_running_and_queued_jobs(stack: Stack, api: httpx.Client) -> None:
    running = submit(api, probe="selftest", params={"behaviour": "hang"})
    wait_for(api, running["id"], until=("running",))
    assert api.post(f"/jobs/{running['id']}/cancel").status_code == 200
    done = wait_for(api, running["id"], timeout=20)
    assert done["state"] == "cancelled" and done["outcome"] == "cancelled" and done["exit_code"] == 3
    # No GPU worker serves its queue: without wait_for_worker it would end `unavailable` at once, or stay queued
    # while the API is inside its start-up grace (no worker state yet), depending on how long the stack has run.
    queued = submit(api, probe="uninit-read", wait_for_worker=True)
    assert queued["state"] == "queued"
    cancelled = api.post(f"/jobs/{queued['id']}/cancel").json()
    assert cancelled["state"] == "cancelled"
    again = api.post(f"/jobs/{queued['id']}/cancel")
    assert again.status_code == 409
    assert again.json()["error"] == f"job {queued['id']} already ended (cancelled): there is nothing to cancel"
    finished = wait_for(api, submit(api, probe="selftest")["id"], timeout=60)
    late = api.post(f"/jobs/{finished['id']}/cancel")
    assert late.status_code == 409 and f"already ended (done, outcome {finished['outcome']})" in late.json()["error"]


def test_redelivered_job_stores_no_second_result(stack: Stack, api: httpx.Client) -> None:
    from cuprobe.service.queue.broker import enqueue
    from cuprobe.service.queue.celery_app import make_celery

    job = submit(api, probe="selftest", params={"behaviour": "violate"})
    wait_for(api, job["id"])
    row = stack.store.get(job["id"])
    assert row is not None
    celery = make_celery(stack.settings)
    for _ in range(3):  # what Redis does after a visibility timeout or a lost ack
        enqueue(celery, row)
    probe = submit(api, probe="selftest", params={"behaviour": "ok"})  # queued behind the duplicates
    wait_for(api, probe["id"])
    assert len(stack.store.runs(job["id"])) == 1
    assert len(stack.store.findings(job["id"])) == 1
    assert stack.store.get(job["id"]).finished_at == row.finished_at  # type: ignore[union-attr]


def test_a_result_carries_the_wall_time_of_each_stage(stack: Stack, api: httpx.Client) -> None:
    job = submit(api, probe="selftest", params={"behaviour": "sleep", "seconds": 0.3})
    done = wait_for(api, job["id"])
    assert done["outcome"] == "clean"
    timing = done["result"]["timing"]
    # Every stage the worker and the runner went through, in the order they ran.
    assert list(timing) == [
        "claim", "load", "gpu_lock", "prepare", "spawn", "run", "reap", "artifacts", "parse", "classify", "scrub",
        "pending",
    ]
    assert all(seconds >= 0 for seconds in timing.values())
    assert timing["run"] >= 0.3  # the probe slept that long
    # The supervised run is spawn + run + reap (each rounded to 0.1 ms).
    assert abs(done["result"]["duration_s"] - (timing["spawn"] + timing["run"] + timing["reap"])) < 0.002
    # ...and the stages fit in the time the job was running (started_at is taken inside the claim).
    began, ended = (datetime.fromisoformat(done[at]) for at in ("started_at", "finished_at"))
    assert sum(timing.values()) - timing["claim"] <= (ended - began).total_seconds() + 0.002  # rounding


def test_a_held_get_answers_when_the_worker_announces_the_end(
    stack: Stack, api: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The held GET would read the store only every 120 s: an answer within the 60 s hold comes from the worker's
    # announcement over Redis.
    monkeypatch.setattr(job_routes, "RECHECK_S", 120.0)
    job = submit(api, probe="selftest", params={"behaviour": "sleep", "seconds": 1.0})
    started = time.monotonic()
    held = api.get(f"/jobs/{job['id']}", params={"wait_s": 60}, timeout=90)
    assert held.status_code == 200 and held.json()["state"] == "done" and held.json()["outcome"] == "clean"
    assert time.monotonic() - started < 45


def test_a_held_get_on_a_job_that_does_not_end_answers_its_state_after_wait_s(api: httpx.Client) -> None:
    job = submit(api, probe="selftest", params={"behaviour": "hang"})
    wait_for(api, job["id"], until=("running",))
    started = time.monotonic()
    held = api.get(f"/jobs/{job['id']}", params={"wait_s": 1.5})
    assert held.status_code == 200 and held.json()["state"] == "running"
    assert time.monotonic() - started >= 1.5
    assert api.post(f"/jobs/{job['id']}/cancel").status_code == 200
    assert wait_for(api, job["id"], timeout=20)["state"] == "cancelled"
    too_long = api.get(f"/jobs/{job['id']}", params={"wait_s": 61})
    assert too_long.status_code == 422 and too_long.json()["field"] == "wait_s"
