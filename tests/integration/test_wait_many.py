"""Waiting for many jobs through the real API and worker: the gate and `cuprobe check` hold POST /jobs/wait until a
job ends (the worker's word over Redis, the store read every second anyway), so a request brings news or a
deadline; nothing reads the jobs at a fixed interval."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from cuprobe.service.api.routes import jobs as job_routes
from cuprobe.service.cli.check import run_checks
from cuprobe.service.client import MAX_WAITED_JOBS, ApiError, Client
from cuprobe.service.queue.waiting import ended_jobs
from tests.cli_app import cli_app
from tests.integration.stack import Stack, wait_for

SUITE = """
name = "held"

[[probe]]
name = "ok"
probe = "selftest"
tool = "none"
repeats = 2
params = { behaviour = "ok" }

[[probe]]
name = "violates"
probe = "selftest"
tool = "none"
repeats = 2
params = { behaviour = "violate" }
"""


class Sent(Counter[str]):
    """`METHOD /path` of each HTTP request the process's httpx clients send, `GET /jobs/ID` spelled with `ID`."""

    def job_reads(self) -> int:
        return self["GET /jobs/ID"]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sent]:
    counted = Sent()
    real = httpx.Client.send

    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        parts = request.url.path.split("/")
        if len(parts) > 2 and parts[1] == "jobs" and parts[2] != "wait":
            parts[2] = "ID"
        counted[f"{request.method} {'/'.join(parts)}"] += 1
        return real(self, request, **kwargs)

    monkeypatch.setattr(httpx.Client, "send", send)
    yield counted


def _submit(api: httpx.Client, **spec: object) -> str:
    response = api.post("/jobs", json=spec)
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


def test_the_gate_gets_every_outcome_from_a_few_held_waits(api: httpx.Client, tmp_path: Path, sent: Sent) -> None:
    (tmp_path / "suite.toml").write_text(SUITE)
    summary = tmp_path / "summary.md"
    argv = ["gate", str(tmp_path / "suite.toml"), "--url", str(api.base_url), "--summary", str(summary)]
    result = CliRunner().invoke(cli_app(), argv)
    assert result.exit_code == 1, result.output
    text = summary.read_text()
    assert "| clean | 2 |" in text and "| findings | 2 |" in text
    for said in ("ok [selftest none] 1/2: clean", "ok [selftest none] 2/2: clean", "violates [selftest none] 2/2"):
        assert said in result.stderr, result.stderr  # a line as each run ends
    assert sent["POST /jobs"] == 4 and sent["GET /jobs/ID/findings"] == 4
    # Each held wait answers with at least one ended run: at most one wait per run, and no job read one by one.
    assert 1 <= sent["POST /jobs/wait"] <= 4 and sent.job_reads() == 0, sent


def test_check_shows_progress_and_gets_every_row_from_held_waits(api: httpx.Client, sent: Sent) -> None:
    said: list[str] = []
    rows = run_checks(Client(str(api.base_url)), ["selftest", "gradcheck", "command"], 15, said.append)
    assert [(r.probe, r.outcome) for r in rows] == [("command", None), ("gradcheck", "clean"), ("selftest", "clean")]
    assert said[0] == "0/2 done; waiting for gradcheck, selftest" and said[-1] == "all done"
    assert 1 <= sent["POST /jobs/wait"] <= 2 and sent.job_reads() == 0, sent


def test_a_job_that_never_ends_stops_the_wait_at_the_callers_deadline(api: httpx.Client, sent: Sent) -> None:
    hung = _submit(api, probe="selftest", params={"behaviour": "hang"})
    pending: list[list[str]] = []
    client = Client(str(api.base_url))
    assert list(ended_jobs(client, [hung], deadline=time.monotonic() + 2, progress=pending.append)) == []
    assert pending[-1] == [hung] and 1 <= sent["POST /jobs/wait"] <= 2, sent  # held to the deadline, not polled
    assert api.post(f"/jobs/{hung}/cancel").status_code == 200
    assert wait_for(api, hung, timeout=30)["state"] == "cancelled"


def test_an_end_nobody_announces_is_read_from_the_store(stack: Stack, api: httpx.Client, sent: Sent) -> None:
    # Queued for a GPU queue no worker serves: it only ends when the store says so, with no word over Redis (as
    # when the word is lost with Redis, or the reconciler ends a job).
    queued = _submit(api, probe="uninit-read", wait_for_worker=True)
    got: list[tuple[str, Any]] = []
    waiter = threading.Thread(target=lambda: got.extend(ended_jobs(Client(str(api.base_url)), [queued])), daemon=True)
    waiter.start()
    while not sent["POST /jobs/wait"]:
        time.sleep(0.05)
    time.sleep(0.5)  # the wait is held by now (ended earlier, it is answered at once: nothing lost either)
    stack.store.cancel(queued)
    waiter.join(45)  # the store is read every second; the wait is held up to 60 s
    assert not waiter.is_alive(), "the held wait did not see the end in the store"
    assert [(i, j["state"]) for i, j in got] == [(queued, "cancelled")] and sent["POST /jobs/wait"] == 1, sent


def test_the_workers_word_wakes_a_wait_on_several_jobs(
    api: httpx.Client, sent: Sent, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The held wait would read the store only every 120 s: news within its 60 s hold comes from the worker's word.
    monkeypatch.setattr(job_routes, "RECHECK_S", 120.0)
    hung = _submit(api, probe="selftest", params={"behaviour": "hang"})
    quick = _submit(api, probe="selftest", params={"behaviour": "sleep", "seconds": 1.0})
    started = time.monotonic()
    job_id, job = next(ended_jobs(Client(str(api.base_url)), [hung, quick]))
    assert job_id == quick and not isinstance(job, ApiError) and job["outcome"] == "clean"
    assert sent["POST /jobs/wait"] == 1 and time.monotonic() - started < 45
    assert api.post(f"/jobs/{hung}/cancel").status_code == 200
    assert wait_for(api, hung, timeout=30)["state"] == "cancelled"


def test_a_wait_names_unknown_ids_at_once_and_refuses_an_empty_or_oversized_list(api: httpx.Client) -> None:
    known = _submit(api, probe="selftest")
    answer = api.post("/jobs/wait", json={"ids": [known, "0" * 32], "wait_s": 60}, timeout=90).json()
    assert answer["missing"] == ["0" * 32] and [j["id"] for j in answer["jobs"]] == [known]
    for ids in ([], [known] * (MAX_WAITED_JOBS + 1)):
        refused = api.post("/jobs/wait", json={"ids": ids})
        assert refused.status_code == 422 and "ids" in refused.json()["field"], refused.text
    wait_for(api, known)


def test_a_server_without_the_many_job_wait_is_waited_on_job_by_job(
    stack: Stack, api: httpx.Client, sent: Sent
) -> None:
    old = stack.start_api(without=[("POST", "/jobs/wait")])  # the same store and queue, as a server before it
    assert old.post("/jobs/wait", json={"ids": ["x"], "wait_s": 0}).status_code in (404, 405)
    quick = _submit(old, probe="selftest")
    slower = _submit(old, probe="selftest", params={"behaviour": "sleep", "seconds": 1.0})
    client = Client(str(old.base_url))
    got = dict(ended_jobs(client, [quick, slower, "0" * 32], deadline=time.monotonic() + 45))
    assert {job_id: (j.status if isinstance(j, ApiError) else j["outcome"]) for job_id, j in got.items()} == {
        quick: "clean", slower: "clean", "0" * 32: 404
    }
    assert sent["POST /jobs/wait"] == 2, sent  # asked once (refused), then read one by one: at most once a second
    assert sent.job_reads() <= 2 * 3 * 46, sent
