"""Running one queued job on a worker: claim it, run the probe with a heartbeat, store the result once."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from service.config import Settings
from service.db.store import ClaimVerdict, Store, worker_identity
from service.models import Outcome, RunResult, Tool
from service.probing import runner
from service.queue.submit import JobSpec

log = logging.getLogger(__name__)


def job_dir(settings: Settings, job_id: str) -> Path:
    """Where a job's attempts keep their artifacts (shared by workers and the API)."""
    return settings.data_dir / "jobs" / job_id


def execute_job(
    job_id: str,
    *,
    store: Store,
    settings: Settings,
    interrupts: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """Run job `job_id` unless it already has a result or runs elsewhere; `interrupts` end it as `timeout`."""
    base = job_dir(settings, job_id)
    claim = store.claim(
        job_id,
        worker_identity(),
        max_attempts=settings.max_attempts,
        stale_after_s=settings.stale_after_s,
        job_dir=str(base),
    )
    if claim.verdict is not ClaimVerdict.RUN:
        job = store.get(job_id)
        log.info("job %s not run: %s", job_id, claim.verdict)
        return {
            "job_id": job_id,
            "ran": False,
            "verdict": claim.verdict.value,
            "state": job.state if job else None,
            "outcome": job.outcome if job else None,
        }
    job = store.get(job_id)
    assert job is not None
    spec = JobSpec.model_validate(job.request)
    workdir = base / f"attempt-{claim.attempt}"
    cancel = threading.Event()
    box: dict[str, RunResult | BaseException] = {}

    def target() -> None:
        try:
            box["result"] = runner.run_probe(
                spec.probe_request(),
                workdir=workdir,
                settings=settings,
                cancel_event=cancel,
                named_suppressions=True,
            )
        except BaseException as exc:  # reported as the job's result below
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"probe-{job_id}", daemon=True)
    thread.start()
    cancelled = interrupted = False
    try:
        while thread.is_alive():
            thread.join(settings.heartbeat_s)
            if thread.is_alive() and store.heartbeat(job_id, claim.attempt):
                cancelled = True
                cancel.set()
    except interrupts:
        interrupted = True
        cancel.set()
        thread.join(30)
    result = _result_of(box, spec.probe, spec.tool or Tool.NONE, interrupted, settings)
    try:
        stored = store.finish(job_id, claim.attempt, result, cancelled=cancelled)
    except SQLAlchemyError as exc:
        # The store refused this result (not an outage: a row it cannot hold). Left running, the job would
        # be re-run until it ended `crashed` for a worker that never died; end it saying what happened.
        log.exception("job %s: the store refused its result", job_id)
        result = unstorable(result, exc, workdir)
        stored = store.finish(job_id, claim.attempt, result, cancelled=cancelled)
    return {
        "job_id": job_id,
        "ran": True,
        "attempt": claim.attempt,
        "stored": stored,
        "outcome": result.outcome.value,
        "cancelled": cancelled,
    }


def unstorable(result: RunResult, exc: Exception, workdir: Path) -> RunResult:
    """`result` without its findings, as a probe_error that says why they are not in the store."""
    return result.model_copy(
        update={
            "outcome": Outcome.PROBE_ERROR,
            "findings": [],
            "message": (
                f"cuprobe could not store this run's result ({type(exc).__name__}: {str(exc).splitlines()[0][:300]}); "
                f"the run itself ended {result.outcome.value} with {len(result.findings)} finding(s): "
                f"{result.message} — its artifacts are in {workdir}"
            ),
        }
    )


def _result_of(
    box: dict[str, RunResult | BaseException], probe: str, tool: Tool, interrupted: bool, settings: Settings
) -> RunResult:
    if interrupted:
        return RunResult(
            probe=probe,
            tool=tool,
            outcome=Outcome.TIMEOUT,
            message=f"the job hit the worker's soft time limit ({settings.task_soft_time_limit_s} s); "
            "its probe was killed",
        )
    found = box.get("result")
    if isinstance(found, RunResult):
        return found
    return RunResult(
        probe=probe,
        tool=tool,
        outcome=Outcome.PROBE_ERROR,
        message=f"cuprobe's runner failed before classifying the run: {box.get('error')!r}",
    )
