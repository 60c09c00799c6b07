"""Running a suite: every entry `repeats` times, here (run_probe) or through the service's HTTP API."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.client import ApiError, Client
from service.config import Settings
from service.gate.suite import Suite, SuiteEntry
from service.models import Finding, Outcome, RunResult
from service.probing.runner import run_probe

# Called after each run finishes: (entry, repeat index, result).
OnResult = Callable[[SuiteEntry, int, RunResult], None]


@dataclass
class EntryRuns:
    """The results of one suite entry, one per repeat."""

    entry: SuiteEntry
    results: list[RunResult] = field(default_factory=list)


def _quiet(entry: SuiteEntry, repeat: int, result: RunResult) -> None:
    """No progress output."""


def run_local(
    suite: Suite, workdir: Path, settings: Settings | None = None, on_result: OnResult = _quiet
) -> list[EntryRuns]:
    """Run every entry on this machine, one after another; artifacts under workdir/ENTRY/REPEAT."""
    out = []
    for entry in suite.entries:
        runs = EntryRuns(entry)
        for repeat in range(entry.repeats):
            result = run_probe(
                entry.request(), workdir=workdir / entry.name / str(repeat), settings=settings, trusted=True
            )
            runs.results.append(result)
            on_result(entry, repeat, result)
        out.append(runs)
    return out


def _not_run(entry: SuiteEntry, outcome: Outcome, message: str) -> RunResult:
    return RunResult(probe=entry.probe, tool=entry.tool, params=entry.params, outcome=outcome, message=message)


def result_of_job(entry: SuiteEntry, job: dict[str, Any], findings: list[dict[str, Any]]) -> RunResult:
    """The RunResult a finished job stored (with its findings), or a could-not-run result saying why."""
    if job.get("result"):
        return RunResult.model_validate({**job["result"], "findings": [Finding.model_validate(f) for f in findings]})
    if job.get("outcome"):
        return _not_run(entry, Outcome(job["outcome"]), job.get("message") or f"job {job['id']} ended without a result")
    return _not_run(
        entry, Outcome.PROBE_ERROR, f"job {job['id']} ended {job['state']}: {job.get('message') or ''}".strip()
    )


def run_remote(suite: Suite, client: Client, *, poll_s: float = 1.0, on_result: OnResult = _quiet) -> list[EntryRuns]:
    """Submit every run as a gate-lane job at once (workers run them in parallel), then poll each to its end."""
    pending: list[tuple[EntryRuns, int, str]] = []
    out = []
    for entry in suite.entries:
        runs = EntryRuns(entry, [])
        out.append(runs)
        for repeat in range(entry.repeats):
            spec: dict[str, Any] = {
                "probe": entry.probe,
                "tool": entry.tool.value,
                "params": entry.params,
                "lane": "gate",
            }
            if options := entry.options.model_dump(mode="json", exclude_defaults=True):
                spec["options"] = options
            for key, value in (("timeout_s", entry.timeout_s), ("arch", suite.arch), ("deadline_s", suite.deadline_s)):
                if value is not None:
                    spec[key] = value
            try:
                job = client.submit(spec)
            except ApiError as exc:
                outcome = Outcome.UNAVAILABLE if exc.status == 0 else Outcome.PROBE_ERROR
                result = _not_run(entry, outcome, f"the service did not take the job: {exc}")
                runs.results.append(result)
                on_result(entry, repeat, result)
                continue
            runs.results.append(_not_run(entry, Outcome.PROBE_ERROR, "pending"))
            pending.append((runs, repeat, job["id"]))
    while pending:
        still = []
        for runs, repeat, job_id in pending:
            try:
                job = client.job(job_id)
                if job["state"] in ("queued", "running"):
                    still.append((runs, repeat, job_id))
                    continue
                result = result_of_job(runs.entry, job, client.findings(job_id)["findings"])
            except ApiError as exc:
                result = _not_run(
                    runs.entry, Outcome.UNAVAILABLE, f"lost the service while waiting for job {job_id}: {exc}"
                )
            runs.results[repeat] = result
            on_result(runs.entry, repeat, result)
        pending = still
        if pending:
            time.sleep(poll_s)
    return out
