"""Waiting for jobs to end (one polling loop for the CLI, check, the gate and sweeps) and reading their results."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from service.db.store import Job, JobState
from service.models import Finding, Outcome, RunResult, Tool

K = TypeVar("K")
J = TypeVar("J")


def ended(state: str) -> bool:
    """Whether a job in `state` has ended (done or cancelled): nothing about it changes any more."""
    return JobState(state).terminal


def poll(
    keys: Iterable[K],
    read: Callable[[K], J],
    finished: Callable[[J], bool],
    *,
    poll_s: float,
    progress: Callable[[dict[K, J]], None] | None = None,
) -> Iterator[tuple[K, J]]:
    """Read every pending job once per `poll_s` and yield (key, job) as each one is `finished`, in any order;
    `progress` sees the still-pending jobs after each round. A round that took `poll_s` itself (a `read` the server
    holds until the job ends) is followed at once by the next."""
    waiting = list(keys)
    while waiting:
        began = time.monotonic()
        pending: dict[K, J] = {}
        for key in waiting:
            job = read(key)
            if finished(job):
                yield key, job
            else:
                pending[key] = job
        waiting = list(pending)
        if progress is not None:
            progress(pending)
        if waiting:
            time.sleep(max(0.0, poll_s - (time.monotonic() - began)))


def job_fields(job: Job) -> dict[str, Any]:
    """A stored job row as the fields the API shows (what result_of_job reads)."""
    return {"id": job.id, "state": job.state, "outcome": job.outcome, "message": job.message, "result": job.result}


def result_of_job(
    job: Mapping[str, Any] | None,
    findings: Sequence[Finding | Mapping[str, Any]],
    *,
    probe: str,
    tool: Tool,
    params: Mapping[str, Any] | None = None,
) -> RunResult:
    """The RunResult an ended job stored, with its findings (the job keeps its result without them: they live in
    the findings table), or a could-not-run result for `probe` under `tool` saying why there is none."""

    def not_run(outcome: Outcome, message: str) -> RunResult:
        return RunResult(probe=probe, tool=tool, params=dict(params or {}), outcome=outcome, message=message)

    if job is None:
        return not_run(Outcome.PROBE_ERROR, "the job vanished from the store")
    if job.get("result"):
        return RunResult.model_validate({**job["result"], "findings": [Finding.model_validate(f) for f in findings]})
    if job.get("outcome"):
        return not_run(Outcome(job["outcome"]), job.get("message") or f"job {job['id']} ended without a result")
    return not_run(Outcome.PROBE_ERROR, f"job {job['id']} ended {job['state']}: {job.get('message') or ''}".strip())
