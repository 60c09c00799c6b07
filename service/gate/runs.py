"""Running a suite: every entry `repeats` times, here (run_probe, K at a time) or through the service's HTTP API.

pytest files of a `per = "file"` entry run first as one process each; a file that cannot give its tests their
results from that process (service/gate/files.py) has its tests run again one per process.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuprobe.service.client import MAX_WAIT_S, ApiError, Client
from cuprobe.service.config import Settings, get_settings
from cuprobe.service.gate.files import split, unexplained, why_not_split
from cuprobe.service.gate.suite import FileRun, Suite, SuiteEntry
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


@dataclass(frozen=True)
class Run:
    """One repeat of one entry."""

    entry: SuiteEntry
    repeat: int


# Runs a batch of runs, yielding each with its result as it ends.
Execute = Callable[[list[Run]], Iterator[tuple[Run, RunResult]]]


def _quiet(entry: SuiteEntry, repeat: int, result: RunResult) -> None:
    """No progress output."""


def run_suite(
    suite: Suite, execute: Execute, on_result: OnResult = _quiet, on_file: OnResult = _quiet
) -> list[EntryRuns]:
    """Every entry's results, in the suite's order; a file whose run shows something no test alone explains is added
    after them under its own entry. `on_file` sees each file's own run as it ends."""
    covered = {test.name for file in suite.files for test in file.tests}
    results: dict[tuple[str, int], RunResult] = {}
    files = {file.entry.name: file for file in suite.files}
    first = [Run(f.entry, r) for f in suite.files for r in range(f.entry.repeats)]
    first += [Run(e, r) for e in suite.entries if e.name not in covered for r in range(e.repeats)]
    file_results: dict[tuple[str, int], RunResult] = {}
    alone: list[Run] = []
    for run, result in execute(first):
        if run.entry.name not in files:
            results[(run.entry.name, run.repeat)] = result
            on_result(run.entry, run.repeat, result)
            continue
        file = files[run.entry.name]
        file_results[(file.entry.name, run.repeat)] = result
        why = why_not_split(file, result)
        on_file(run.entry, run.repeat, result.model_copy(update={"message": why or result.message}))
        if why is not None:
            alone += [Run(test, run.repeat) for test in file.tests]
            continue
        for test, own in zip(file.tests, split(file, result), strict=True):
            results[(test.name, run.repeat)] = own
            on_result(test, run.repeat, own)
    for run, result in execute(alone):
        results[(run.entry.name, run.repeat)] = result
        on_result(run.entry, run.repeat, result)
    out = [EntryRuns(e, [results[(e.name, r)] for r in range(e.repeats)]) for e in suite.entries]
    return out + _unexplained(suite.files, file_results, results)


def _unexplained(
    files: list[FileRun], file_results: dict[tuple[str, int], RunResult], results: dict[tuple[str, int], RunResult]
) -> list[EntryRuns]:
    out = []
    for file in files:
        kept = []
        for repeat in range(file.entry.repeats):
            result = file_results[(file.entry.name, repeat)]
            if why_not_split(file, result) is None:
                continue
            if (own := unexplained(result, [results[(t.name, repeat)] for t in file.tests])) is not None:
                kept.append(own)
        if kept:
            out.append(EntryRuns(file.entry, kept))
    return out


def local_executor(workdir: Path, settings: Settings, slots: int) -> Execute:
    """Runs here, `slots` at a time; artifacts under workdir/ENTRY/REPEAT."""

    def execute(runs: list[Run]) -> Iterator[tuple[Run, RunResult]]:
        if not runs:
            return
        with ThreadPoolExecutor(max_workers=max(1, slots), thread_name_prefix="cuprobe-gate") as pool:
            futures = {
                pool.submit(
                    run_probe,
                    run.entry.request(),
                    workdir=workdir / run.entry.name / str(run.repeat),
                    settings=settings,
                    trusted=True,
                ): run
                for run in runs
            }
            for done in as_completed(futures):
                yield futures[done], done.result()

    return execute


def run_local(
    suite: Suite,
    workdir: Path,
    settings: Settings | None = None,
    on_result: OnResult = _quiet,
    slots: int = 1,
    on_file: OnResult = _quiet,
) -> list[EntryRuns]:
    """Run every entry on this machine, `slots` processes at a time; artifacts under workdir/ENTRY/REPEAT."""
    return run_suite(suite, local_executor(workdir, settings or get_settings(), slots), on_result, on_file)


def _not_run(entry: SuiteEntry, outcome: Outcome, message: str) -> RunResult:
    return RunResult(probe=entry.probe, tool=entry.tool, params=entry.params, outcome=outcome, message=message)


class ServiceRefused(ValueError):
    """The service refused one of the suite's jobs as bad input (HTTP 4xx): the gate's input, not a run, is wrong."""


def _cancel_all(client: Client, pending: dict[str, Run]) -> None:
    """Cancel the jobs already submitted (a gate refused as a whole runs none of them); best effort."""
    for job_id in pending:
        with contextlib.suppress(ApiError):
            client.cancel(job_id)


def _spec(suite: Suite, entry: SuiteEntry, label: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "probe": entry.probe,
        "tool": entry.tool.value,
        "params": entry.params,
        "lane": "gate",
        "label": label,
    }
    if options := entry.options.model_dump(mode="json", exclude_defaults=True):
        spec["options"] = options
    for key, value in (
        ("timeout_s", entry.timeout_s),
        ("arch", suite.arch),
        ("deadline_s", suite.deadline_s),
        ("confirm", entry.confirm),
    ):
        if value is not None:
            spec[key] = value
    return spec


def remote_executor(suite: Suite, client: Client, hold_s: float = MAX_WAIT_S) -> Execute:
    """Submits each batch as gate-lane jobs at once (workers run them in parallel), then waits for them with held
    requests; the jobs share one label, so the dashboard shows them as one gate run."""
    label = gate_label(suite.name, uuid.uuid4().hex[:8])

    def execute(runs: list[Run]) -> Iterator[tuple[Run, RunResult]]:
        pending: dict[str, Run] = {}
        unreachable: RunResult | None = None  # the first connection error: no further submits are tried
        for run in runs:
            entry = run.entry
            if unreachable is not None:
                yield (
                    run,
                    unreachable.model_copy(update={"probe": entry.probe, "tool": entry.tool, "params": entry.params}),
                )
                continue
            try:
                job = client.submit(_spec(suite, entry, label))
            except ApiError as exc:
                if 400 <= exc.status < 500:  # the suite asks for something this service refuses: bad input
                    _cancel_all(client, pending)
                    raise ServiceRefused(f"{entry.name}: the service refused the job: {exc.said()}") from exc
                outcome = Outcome.UNAVAILABLE if exc.status == 0 else Outcome.PROBE_ERROR
                result = _not_run(entry, outcome, f"the service did not take the job: {exc}")
                if exc.status == 0:
                    unreachable = result
                yield run, result
                continue
            pending[job["id"]] = run
        seen = set()
        for job_id, ended_job in ended_jobs(client, pending, hold_s=hold_s):
            run = pending[job_id]
            seen.add(job_id)
            try:
                if isinstance(ended_job, ApiError):
                    raise ended_job
                findings = client.findings(job_id)["findings"]
                entry = run.entry
                result = result_of_job(ended_job, findings, probe=entry.probe, tool=entry.tool, params=entry.params)
            except ApiError as exc:
                result = _not_run(
                    run.entry, Outcome.UNAVAILABLE, f"lost the service while waiting for job {job_id}: {exc}"
                )
            yield run, result
        for job_id, run in pending.items():
            if job_id not in seen:
                yield run, _not_run(run.entry, Outcome.PROBE_ERROR, f"job {job_id} did not end while the gate waited")

    return execute


def run_remote(
    suite: Suite,
    client: Client,
    *,
    hold_s: float = MAX_WAIT_S,
    on_result: OnResult = _quiet,
    on_file: OnResult = _quiet,
) -> list[EntryRuns]:
    """Run every entry as a job of the service (see remote_executor)."""
    return run_suite(suite, remote_executor(suite, client, hold_s), on_result, on_file)
