"""Running a suite: every entry `repeats` times, here (run_probe) or through the service's HTTP API."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuprobe.service.client import MAX_WAIT_S, ApiError, Client
from cuprobe.service.config import Settings
from cuprobe.service.gate.suite import Suite, SuiteEntry
from cuprobe.service.models import Outcome, RunResult
from cuprobe.service.models.queues import gate_label
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.queue.waiting import ended_jobs, result_of_job

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


class ServiceRefused(ValueError):
    """The service refused one of the suite's jobs as bad input (HTTP 4xx): the gate's input, not a run, is wrong."""


def _cancel_all(client: Client, pending: dict[str, tuple[EntryRuns, int]]) -> None:
    """Cancel the jobs already submitted (a gate refused as a whole runs none of them); best effort."""
    for job_id in pending:
        with contextlib.suppress(ApiError):
            client.cancel(job_id)


def run_remote(
    suite: Suite, client: Client, *, hold_s: float = MAX_WAIT_S, on_result: OnResult = _quiet
) -> list[EntryRuns]:
    """Submit every run as a gate-lane job at once (workers run them in parallel), then wait for them all with held
    requests, each run's result as it ends; the jobs share one label, so the dashboard shows them as one gate run."""
    label = gate_label(suite.name, uuid.uuid4().hex[:8])
    pending: dict[str, tuple[EntryRuns, int]] = {}
    out = []
    unreachable: RunResult | None = None  # the first connection error: no further submits are tried
    for entry in suite.entries:
        runs = EntryRuns(entry, [])
        out.append(runs)
        for repeat in range(entry.repeats):
            spec: dict[str, Any] = {
                "probe": entry.probe,
                "tool": entry.tool.value,
                "params": entry.params,
                "lane": "gate",
                "label": label,
            }
            if options := entry.options.model_dump(mode="json", exclude_defaults=True):
                spec["options"] = options
            for key, value in (("timeout_s", entry.timeout_s), ("arch", suite.arch), ("deadline_s", suite.deadline_s)):
                if value is not None:
                    spec[key] = value
            if unreachable is not None:
                same = {"probe": entry.probe, "tool": entry.tool, "params": entry.params}
                result = unreachable.model_copy(update=same)
                runs.results.append(result)
                on_result(entry, repeat, result)
                continue
            try:
                job = client.submit(spec)
            except ApiError as exc:
                if 400 <= exc.status < 500:  # the suite asks for something this service refuses: bad input
                    _cancel_all(client, pending)
                    raise ServiceRefused(f"{entry.name}: the service refused the job ({exc.status}): {exc}") from exc
                outcome = Outcome.UNAVAILABLE if exc.status == 0 else Outcome.PROBE_ERROR
                result = _not_run(entry, outcome, f"the service did not take the job: {exc}")
                if exc.status == 0:
                    unreachable = result
                runs.results.append(result)
                on_result(entry, repeat, result)
                continue
            runs.results.append(_not_run(entry, Outcome.PROBE_ERROR, "pending"))
            pending[job["id"]] = (runs, repeat)

    for job_id, ended_job in ended_jobs(client, pending, hold_s=hold_s):
        runs, repeat = pending[job_id]
        try:
            if isinstance(ended_job, ApiError):
                raise ended_job
            findings = client.findings(job_id)["findings"]
            entry = runs.entry
            result = result_of_job(ended_job, findings, probe=entry.probe, tool=entry.tool, params=entry.params)
        except ApiError as exc:
            result = _not_run(
                runs.entry, Outcome.UNAVAILABLE, f"lost the service while waiting for job {job_id}: {exc}"
            )
        runs.results[repeat] = result
        on_result(runs.entry, repeat, result)
    return out
