"""`cuprobe check`: every registered probe once at its defaults, through the embedded service or right here."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from cuprobe.probes import registry
from cuprobe.service.cli.embedded import embedded_stack
from cuprobe.service.client import ApiError, Client
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.queue.waiting import ended_jobs


@dataclass
class CheckRow:
    """One probe's line in the check table; outcome None when it was not run (it needs parameters)."""

    probe: str
    tool: str
    outcome: str | None
    message: str
    job: str | None = None


Progress = Callable[[str], None]


def check_local(timeout_s: float, progress: Progress) -> list[CheckRow]:
    """Run each probe in this process's machine, one after another, without the service."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="cuprobe-check-") as tmp:
        for name in registry.available():
            progress(f"running {name}")
            try:
                result = run_probe(ProbeRequest(probe=name, timeout_s=timeout_s), workdir=Path(tmp) / name)
            except BadRequest as exc:  # a probe with required parameters (command) has no default run
                rows.append(CheckRow(name, "-", None, f"needs parameters: {exc}".splitlines()[0]))
                continue
            rows.append(CheckRow(name, result.tool.value, result.outcome.value, result.message))
    return rows


def _wait_for_workers(client: Client, expected: int, limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s
    while len(client.health().get("workers") or {}) < expected:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the embedded workers did not start within {limit_s:.0f} s")
        time.sleep(0.3)


def check_service(settings: Settings, timeout_s: float, progress: Progress) -> list[CheckRow]:
    """Submit each probe as a job to the embedded service (broker, SQLite store, workers, API) and wait."""
    # The embedded stack knows which workers it started: a job no worker serves (a GPU probe on a machine
    # without a GPU) ends `unavailable` a few seconds after the workers are up, not at its deadline.
    settings = settings.model_copy(update={"reconcile_interval_s": 1.0, "unserved_after_s": 3.0})
    with embedded_stack(settings, quiet=True) as stack:
        client = Client(stack.url, timeout=60)
        progress(f"starting {len(stack.devices)} GPU worker(s) and a CPU worker")
        _wait_for_workers(client, len(stack.devices) + 1)
        return run_checks(client, registry.available(), timeout_s, progress)


def run_checks(client: Client, probes: Iterable[str], timeout_s: float, progress: Progress) -> list[CheckRow]:
    """Submit each probe at its defaults as a job and wait for them all (held requests: each end is seen as it
    happens); a row per probe, in name order."""
    rows: list[CheckRow] = []
    jobs: dict[str, str] = {}  # job id -> probe
    for name in probes:
        try:
            jobs[client.submit({"probe": name, "timeout_s": timeout_s})["id"]] = name
        except ApiError as exc:  # 422: a probe with required parameters (command) has no default run
            rows.append(CheckRow(name, "-", None, f"needs parameters: {exc}".splitlines()[0]))

    def show(pending: list[str]) -> None:
        waiting = sorted(jobs[job_id] for job_id in pending)
        done = len(jobs) - len(waiting)
        progress(f"{done}/{len(jobs)} done; waiting for {', '.join(waiting)}" if waiting else "all done")

    for job_id, job in ended_jobs(client, jobs, progress=show):
        if isinstance(job, ApiError):
            raise job
        outcome = job["outcome"] if job["state"] == "done" else "cancelled"
        rows.append(CheckRow(jobs[job_id], str(job["tool"]), str(outcome), str(job["message"]), job_id))
    return sorted(rows, key=lambda row: row.probe)
