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
    """One probe's line in the check table; outcome None when it was not run (it needs parameters). `as_expected`:
    every case met its expectation (clean where clean was expected, a planted defect found where one was planted)."""

    probe: str
    tool: str
    outcome: str | None
    message: str
    job: str | None = None
    as_expected: bool = False


def not_run(name: str) -> CheckRow:
    """The row of a probe with no run at its defaults (it needs parameters, e.g. the program `command` runs)."""
    return CheckRow(name, "-", None, f"it needs parameters, none at its defaults (`cuprobe probes {name}` lists them)")


# What a GPU probe's row says on a machine without one, in place of the unserved queue's message.
NO_GPU = "this machine has no GPU; run `cuprobe check` on one with an NVIDIA GPU (`cuprobe doctor` says what is here)"


Progress = Callable[[str], None]


def check_local(timeout_s: float, progress: Progress, probes: Iterable[str] | None = None) -> list[CheckRow]:
    """Run each probe (default: every registered one) on this machine, one after another, without the service."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="cuprobe-check-") as tmp:
        for name in registry.available() if probes is None else probes:
            progress(f"running {name}")
            try:
                result = run_probe(ProbeRequest(probe=name, timeout_s=timeout_s), workdir=Path(tmp) / name)
            except BadRequest:  # a probe with required parameters (command) has no default run
                rows.append(not_run(name))
                continue
            expected = bool(result.cases) and all(case.passed for case in result.cases)
            rows.append(CheckRow(name, result.tool.value, result.outcome.value, result.message, None, expected))
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
    with embedded_stack(settings, quiet=True, private_broker=True) as stack:
        client = Client(stack.url, timeout=60)
        progress(f"starting {len(stack.devices)} GPU worker(s) and a CPU worker")
        _wait_for_workers(client, len(stack.devices) + 1)
        rows = run_checks(client, registry.available(), timeout_s, progress)
    if not stack.devices:  # the unserved GPU queue's own message names queues and times a user need not read
        for row in rows:
            if row.outcome == "unavailable":
                row.message = NO_GPU
    return rows


def run_checks(client: Client, probes: Iterable[str], timeout_s: float, progress: Progress) -> list[CheckRow]:
    """Submit each probe at its defaults as a job and wait for them all (held requests: each end is seen as it
    happens); a row per probe, in name order."""
    rows: list[CheckRow] = []
    jobs: dict[str, str] = {}  # job id -> probe
    for name in probes:
        try:
            jobs[client.submit({"probe": name, "timeout_s": timeout_s})["id"]] = name
        except ApiError:  # 422/403: a probe with required parameters (command) has no default run
            rows.append(not_run(name))

    def show(pending: list[str]) -> None:
        waiting = sorted(jobs[job_id] for job_id in pending)
        done = len(jobs) - len(waiting)
        progress(f"{done}/{len(jobs)} done; waiting for {', '.join(waiting)}" if waiting else "all done")

    for job_id, job in ended_jobs(client, jobs, progress=show):
        if isinstance(job, ApiError):
            raise job
        outcome = job["outcome"] if job["state"] == "done" else "cancelled"
        cases = (job.get("result") or {}).get("cases") or []
        expected = bool(cases) and all(case.get("passed") for case in cases)
        rows.append(CheckRow(jobs[job_id], str(job["tool"]), str(outcome), str(job["message"]), job_id, expected))
    return sorted(rows, key=lambda row: row.probe)


def check_verdict(rows: list[CheckRow], strict: bool) -> tuple[int, str]:
    """The exit code and the one line that says why: 3 when a probe could not run (one that needs a GPU this
    machine lacks only with `strict`), 1 when one that ran did not behave as expected, else 0."""
    ran = [r for r in rows if r.outcome in ("clean", "findings")]
    unavailable = [r.probe for r in rows if r.outcome == "unavailable"]
    broken = [r.probe for r in rows if r.outcome is not None and r.outcome not in ("clean", "findings", "unavailable")]
    if broken:
        return 3, f"exit 3: {names(broken)} could not run (see the table)"
    if strict and unavailable:
        return 3, f"exit 3 (--strict): {names(unavailable)} could not run here"
    unexpected = [r.probe for r in ran if not r.as_expected]
    if unexpected:
        return 1, f"exit 1: {names(unexpected)} did not behave as expected (see the table)"
    fired = sum(r.outcome == "findings" for r in ran)
    line = f"every probe that ran behaved as expected: {len(ran) - fired} clean"
    line += f", {fired} found the defects planted in them" if fired else ""
    if unavailable:
        line += f"; {len(unavailable)} could not run here, not counted (--strict counts them)"
    return 0, line


def names(probes: list[str]) -> str:
    return ", ".join(probes) if len(probes) <= 4 else f"{', '.join(probes[:4])} and {len(probes) - 4} more"
