"""Running one queued job on a worker: claim it, run the probe with a heartbeat, store the result once."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy.exc import SQLAlchemyError

from cuprobe.probes import registry
from cuprobe.service.config import Settings
from cuprobe.service.db.errors import transient
from cuprobe.service.db.pending import clear_pending, write_pending
from cuprobe.service.db.store import ClaimVerdict, Store, utcnow, worker_identity
from cuprobe.service.models import Outcome, RunResult, Tool
from cuprobe.service.models.queues import Lane
from cuprobe.service.models.timing import Stages
from cuprobe.service.probing import runner
from cuprobe.service.probing.confirm import join
from cuprobe.service.queue.submit import JobSpec
from cuprobe.service.worker.gpu_slots import gpu_held
from cuprobe.service.worker.stopping import hand_back
from cuprobe.service.worker.warm import worker_spares

log = logging.getLogger(__name__)
T = TypeVar("T")
# Time kept back from the task's soft limit for giving up cleanly (the result stays on disk for the reconciler).
STORE_MARGIN_S = 5.0
# Upper bound on stopping a probe (SIGTERM grace, then SIGKILL of its tree).
KILL_S = 3.0


def job_dir(settings: Settings, job_id: str) -> Path:
    """Where a job's attempts keep their artifacts (shared by workers and the API)."""
    return settings.data_dir / "jobs" / job_id


class JobReport(BaseModel):
    """What one execution of a job did: the Celery task's result. Only what applies to its path is set (`summary`):
    not run (the claim's verdict, the job's state and outcome), handed back, re-queued, or stored."""

    job_id: str
    ran: bool
    verdict: str | None = None
    state: str | None = None
    attempt: int | None = None
    stored: bool | None = None
    handed_back: bool | None = None
    requeued: bool | None = None
    outcome: str | None = None
    cancelled: bool | None = None
    warm_start: bool | None = None

    def summary(self) -> dict[str, Any]:
        """The fields this path set, as JSON (a field set to None, such as a not-run job's missing outcome, stays)."""
        return self.model_dump(mode="json", exclude_unset=True)


@dataclass
class Attempt:
    """A claimed attempt at a job: its request, settings (a sweep batch's record cap), folder and timing."""

    job_id: str
    number: int
    spec: JobSpec
    settings: Settings
    workdir: Path
    stages: Stages
    cancel: threading.Event = field(default_factory=threading.Event)


def _claim(job_id: str, store: Store, settings: Settings) -> Attempt | JobReport:
    """This worker's claim on the job: an Attempt to run, or the report of why it is not run here (it has a
    result, runs elsewhere, or has used up its attempts)."""
    base = job_dir(settings, job_id)
    stages = Stages()
    with stages.stage("claim"):
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
        return JobReport(
            job_id=job_id,
            ran=False,
            verdict=claim.verdict.value,
            state=job.state if job else None,
            outcome=job.outcome if job else None,
        )
    with stages.stage("load"):
        spec = JobSpec.model_validate(claim.request)
    if spec.lane is Lane.SWEEP:  # one batch of a sweep: the sweep's record cap, as a local sweep's process has
        settings = settings.model_copy(update={"max_records": settings.sweep_max_records})
    return Attempt(job_id, claim.attempt, spec, settings, base / f"attempt-{claim.attempt}", stages)


def _start(attempt: Attempt) -> Future[RunResult]:
    """The probe run on its own thread, holding the GPU (the whole of it for a timing probe), with this pool
    process's spare where it matches and the host's shared re-runs where the job has a ticket."""
    spec, settings, stages, cancel = attempt.spec, attempt.settings, attempt.stages, attempt.cancel
    exclusive = registry.get(spec.probe).bare_only  # timing probes take the whole GPU
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")  # the GPU this worker is pinned to ("" on the CPU worker)
    # Warm starts (warm.py): this pool process's spare, taken where it matches; one readied for the next job like
    # this one only where the sweep said one comes.
    spares = worker_spares(settings, gpu)
    if spares is not None:
        spares.budget = 1 if spec.warm_next else 0

    def run() -> RunResult:
        locking = time.perf_counter()
        with gpu_held(settings.data_dir / "locks", gpu, exclusive=exclusive, cancel=cancel, data_dir=settings.data_dir):
            stages.add("gpu_lock", time.perf_counter() - locking)
            request = spec.probe_request()
            # A sweep's jobs of one grid share one set of the confirmation's re-runs on this host (confirm/host.py).
            shared = join(request, spec.confirm_share, settings, cancel, attempt.workdir, member=attempt.job_id)
            try:
                return runner.run_probe(
                    request,
                    workdir=attempt.workdir,
                    settings=settings,
                    cancel_event=cancel,
                    stages=stages,
                    shared=shared,
                    spares=spares,
                )
            finally:
                if shared is not None:
                    shared.close()
                if spares is not None:
                    spares.touch()  # its spare's idle time counts from this job's end

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"probe-{attempt.job_id}")
    running = pool.submit(run)
    pool.shutdown(wait=False)  # the pool ends with its one run
    return running


def _watch(
    running: Future[RunResult],
    beat: Heartbeat,
    settings: Settings,
    interrupts: tuple[type[BaseException], ...],
    stop: threading.Event | None,
) -> bool:
    """Wait for the run, reading the cancel flag every cancel_poll_s and beating every heartbeat_s, until it ends or
    the worker stops; True where one of `interrupts` ended it (the probe is stopped)."""
    try:
        beat_at = time.monotonic()
        while not running.done() and not (stop is not None and stop.is_set()):
            wait([running], timeout=min(settings.cancel_poll_s, settings.heartbeat_s))
            if running.done():
                break
            if time.monotonic() - beat_at >= settings.heartbeat_s:
                beat_at = time.monotonic()
                beat.once()
            else:
                beat.check_cancel()
    except interrupts:
        beat.cancel.set()
        wait([running], timeout=30)
        return True
    return False


def _not_stored(
    attempt: Attempt, running: Future[RunResult], beat: Heartbeat, store: Store, stopping: bool, deadline: float
) -> JobReport | None:
    """The report of an attempt that stores no result: its worker is stopping (the job handed back, uncounted), or
    it lost the store (the job re-queued to run again); None where its result is to be stored."""
    job_id, number, settings = attempt.job_id, attempt.number, attempt.settings
    if stopping and not (beat.cancelled or running.done()):
        # The worker is stopping, not dying: stop the probe, and queue the job again without counting this attempt.
        attempt.cancel.set()
        ended = not wait([running], timeout=30).not_done
        handed = ended and hand_back(store, settings, job_id, number, attempt.workdir)
        return JobReport(job_id=job_id, ran=True, attempt=number, stored=False, handed_back=handed)
    if beat.lost:
        # This attempt stopped its own probe before its heartbeat went stale: hand the job back, run it again.
        released = retry_store(
            lambda: store.requeue(
                job_id,
                number,
                f"re-queued: attempt {number} stopped its probe after {beat.silent_s():.0f} s without "
                "reaching the store (a store outage); it runs again",
                utcnow() + timedelta(seconds=settings.queue_deadline_s),
            ),
            deadline,
        )
        return JobReport(job_id=job_id, ran=True, attempt=number, stored=False, requeued=released)
    return None


def _store(
    attempt: Attempt, result: RunResult, store: Store, cancelled: bool, deadline: float
) -> tuple[bool | None, RunResult]:
    """The result kept beside the artifacts, then stored (retried through store outages until `deadline`); a result
    the store refuses ends the job saying so. Whether it was stored (None: not before the deadline), and what was."""
    job_id, number, workdir = attempt.job_id, attempt.number, attempt.workdir
    # Kept beside the artifacts until stored: past the retries the reconciler stores it when the store is back.
    with attempt.stages.stage("pending"):
        write_pending(workdir, number, result, cancelled=cancelled)
    result = result.model_copy(update={"timing": attempt.stages.rounded()})
    try:
        stored = retry_store(lambda: store.finish(job_id, number, result, cancelled=cancelled), deadline)
    except SQLAlchemyError as exc:
        # The store refused this result (a row it cannot hold, not an outage). Left running, the job would
        # be re-run until it ended `crashed` for a worker that never died; end it saying what happened.
        log.exception("job %s: the store refused its result", job_id)
        result = unstorable(result, exc, workdir)
        write_pending(workdir, number, result, cancelled=cancelled)
        stored = retry_store(lambda: store.finish(job_id, number, result, cancelled=cancelled), deadline)
    if stored is not None:
        clear_pending(workdir)
    return stored, result


def execute_job(
    job_id: str,
    *,
    store: Store,
    settings: Settings,
    interrupts: tuple[type[BaseException], ...] = (),
    time_limit_s: float | None = None,
    announce: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> JobReport:
    """Run job `job_id` unless it already has a result or runs elsewhere; `interrupts` end it as `timeout`.
    Store outages are retried until `time_limit_s` (default: the task's soft limit) minus a margin has passed.
    `announce(job_id)` tells waiters (a held GET /jobs/{id}) that the result is stored. `stop` set while the probe
    runs (its worker is stopping: service/worker/stopping.py) stops the probe and hands the job back, uncounted."""
    deadline = time.monotonic() + (time_limit_s or settings.task_soft_time_limit_s) - STORE_MARGIN_S
    attempt = _claim(job_id, store, settings)
    if isinstance(attempt, JobReport):
        return attempt
    running = _start(attempt)
    beat = Heartbeat(store, attempt.settings, job_id, attempt.number, attempt.cancel)
    interrupted = _watch(running, beat, attempt.settings, interrupts, stop)
    stopping = stop is not None and stop.is_set() and not interrupted
    if (unstored := _not_stored(attempt, running, beat, store, stopping, deadline)) is not None:
        return unstored
    result = _result_of(running, attempt.spec.probe, attempt.spec.tool or Tool.NONE, interrupted, attempt.settings)
    stored, result = _store(attempt, result, store, beat.cancelled, deadline)
    if stored and announce is not None:
        announce(job_id)
    return JobReport(
        job_id=job_id,
        ran=True,
        attempt=attempt.number,
        stored=stored,
        outcome=result.outcome.value,
        cancelled=beat.cancelled,
        warm_start=result.warm_start,
    )


class Heartbeat:
    """A running attempt's heartbeat: store errors are tolerated, but an attempt that cannot reach the store for
    nearly `stale_after_s` stops its probe (`lost`), before another worker may take the job: one probe per job."""

    def __init__(self, store: Store, settings: Settings, job_id: str, attempt: int, cancel: threading.Event) -> None:
        self.store, self.job_id, self.attempt, self.cancel = store, job_id, attempt, cancel
        self.interval_s = settings.heartbeat_s
        # Stop early enough that a beat blocked for the store timeout and the kill itself still end before stale.
        self.stop_after_s = max(
            settings.heartbeat_s, settings.stale_after_s - settings.heartbeat_s - settings.store_timeout_s - KILL_S
        )
        self.last_ok = time.monotonic()
        self.cancelled = self.lost = False

    def silent_s(self) -> float:
        return time.monotonic() - self.last_ok

    def once(self) -> None:
        began = time.monotonic()
        try:
            if self.store.heartbeat(self.job_id, self.attempt):
                self.cancelled = True
                self.cancel.set()
            self.last_ok = began
        except SQLAlchemyError as exc:
            if not transient(exc):
                raise
            log.warning("job %s: heartbeat failed (%s s silent): %s", self.job_id, f"{self.silent_s():.0f}", exc)
            if self.silent_s() > self.stop_after_s and not self.lost:
                log.error("job %s: store unreachable for %.0f s: stopping the probe", self.job_id, self.silent_s())
                self.lost = True
                self.cancel.set()

    def check_cancel(self) -> None:
        """Stop the probe if someone asked (read between heartbeats; a store error waits for the next beat)."""
        try:
            if self.store.cancel_requested(self.job_id):
                self.cancelled = True
                self.cancel.set()
        except SQLAlchemyError as exc:
            if not transient(exc):
                raise


def retry_store(write: Callable[[], T], deadline: float) -> T | None:
    """`write()`, retried through store outages until `deadline` (monotonic); None when the store stayed down.
    A refusal (constraint, bad value) is raised at once: retrying cannot change it."""
    pause = 0.5
    while True:
        try:
            return write()
        except SQLAlchemyError as exc:
            if not transient(exc):
                raise
            if time.monotonic() + pause > deadline:
                log.error("store still unreachable at the job's time limit: %s", exc)
                return None
            log.warning("store unreachable, retrying in %.1f s: %s", pause, exc)
            time.sleep(pause)
            pause = min(pause * 2, 5.0)


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


def _result_of(running: Future[RunResult], probe: str, tool: Tool, interrupted: bool, settings: Settings) -> RunResult:
    if interrupted:
        return RunResult(
            probe=probe,
            tool=tool,
            outcome=Outcome.TIMEOUT,
            message=f"the job hit the worker's soft time limit ({settings.task_soft_time_limit_s} s); "
            "its probe was killed",
        )
    error = running.exception()
    if error is None:
        return running.result()
    return RunResult(
        probe=probe,
        tool=tool,
        outcome=Outcome.PROBE_ERROR,
        message=f"cuprobe's runner failed before classifying the run: {error!r}",
    )
