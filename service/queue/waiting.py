"""Waiting for jobs to end and reading their results: many jobs through the API by held waits (check, the gate),
one job or the store by a polling loop (`submit --wait`, `cancel`, sweeps)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from cuprobe.service.client import MAX_WAIT_S, MAX_WAITED_JOBS, ApiError, Client
from cuprobe.service.db.store import Job, JobState
from cuprobe.service.models import Finding, Outcome, RunResult, Tool

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


def ended_jobs(
    client: Client,
    job_ids: Iterable[str],
    *,
    hold_s: float = MAX_WAIT_S,
    deadline: float | None = None,
    progress: Callable[[list[str]], None] | None = None,
) -> Iterator[tuple[str, dict[str, Any] | ApiError]]:
    """Yield (job id, job) as each job ends, in the order they end. Each POST /jobs/wait is held by the API until
    one of the pending jobs ends (it reads the store on the worker's word, and every second anyway) or `hold_s`
    passes, so a request brings news or lasts `hold_s`: no fixed-interval polling. A job the store does not hold,
    or a service that cannot be reached, comes back as an ApiError. `progress` sees the ids still pending at the
    start and after each answer; at `deadline` (time.monotonic()) the jobs that have not ended are left unyielded."""
    waiting = list(dict.fromkeys(job_ids))
    if progress is not None:
        progress(waiting)
    while waiting:
        left = math.inf if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return
        asked = waiting[:MAX_WAITED_JOBS]  # more: the rest are asked about as the first ones end
        jobs: dict[str, dict[str, Any] | ApiError]
        try:
            answer = client.wait(asked, wait_s=min(hold_s, left))
            jobs = {job["id"]: job for job in answer["jobs"]}
            jobs |= {job_id: ApiError(404, f"no job {job_id}") for job_id in answer["missing"]}
        except ApiError as exc:
            jobs = dict.fromkeys(asked, exc)
        news = {job_id for job_id in asked if _over(jobs[job_id])}
        for job_id in asked:
            if job_id in news:
                yield job_id, jobs[job_id]
        waiting = [job_id for job_id in waiting if job_id not in news]
        if progress is not None:
            progress(waiting)


def _over(job: dict[str, Any] | ApiError) -> bool:
    return isinstance(job, ApiError) or ended(job["state"])


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
