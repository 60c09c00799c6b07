"""The scheduled sweep through the service: run a definition as sweep-lane jobs and store it; and resume one whose
process ended before it finished (the CPU worker restarted, killed, out of memory).

The jobs of a scheduled sweep carry its label (`sweep:ID`) and its stored row the definition's path and the slots
it was planned for. The jobs keep running on the GPU workers whatever happens to the process waiting for them, so
a CPU worker's maintenance pass (tasks/maintenance.py) that finds such a sweep's process certainly gone
(SweepStore.orphans: by its pid on its own host, from any host once its beat has been silent for owner.SILENT)
sends it to be resumed: planned again for the same slots, it takes back the jobs already sent,
sends only those that were not, waits, and stores the sweep as if it had not stopped (its message says it was
resumed, and how).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import redis
from redis.exceptions import LockError

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Job, Store
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.sweep.adopt import sweep_label
from cuprobe.service.sweep.compare import changes
from cuprobe.service.sweep.culprits import bisect_changes, remove_checkout
from cuprobe.service.sweep.definition import SweepDefinition, load_definition
from cuprobe.service.sweep.execute import ProcessRunner, ServiceRunner, run_sweep
from cuprobe.service.sweep.notify import notify
from cuprobe.service.sweep.own_tests import Checkout, check_out
from cuprobe.service.sweep.schedule import running_key

log = logging.getLogger(__name__)

# A sweep whose process keeps ending (killed each time it runs) is not resumed for ever.
MAX_RESUMES = 3
# How long a worker about to resume a sweep keeps others from doing the same (until it owns it in the store).
RESUME_CLAIM_S = 120


def resume_key(sweep_id: str) -> str:
    return f"cuprobe:sweep:resume:{sweep_id}"


def _run(
    sweeps: SweepStore,
    sweep_id: str,
    definition_path: Path,
    runner: ProcessRunner,
    settings: Settings,
    started: datetime | None = None,
) -> tuple[Sweep, Callable[[Sweep], Sweep]]:
    """Run the definition under `sweep_id` (its [[test]] entries in a checkout of its repository's branch head); a
    sweep that raises is stored as failed with why. Returns the sweep and what keeps it: store, bisect, notify."""
    checkout = None
    try:
        definition = load_definition(definition_path)
        with sweeps.beating(sweep_id):  # another host can then tell this live sweep from an orphan
            if definition.repo is not None:
                checkout = check_out(definition, settings, resumed=started is not None)
            sweep = run_sweep(
                definition,
                runner,
                sweep_id=sweep_id,
                progress=lambda done, total, what: sweeps.progress(sweep_id, done, total, what),
                started=started,
                checkout=checkout,
            )
    except Exception as exc:
        if checkout is not None:
            remove_checkout(checkout)
        sweeps.fail(sweep_id, f"{type(exc).__name__}: {exc}")
        raise
    # A bisect's steps run where the sweep's processes ran: jobs on the GPU workers, or here.
    mode = "service" if isinstance(runner, ServiceRunner) else "local"
    return sweep, lambda done: _keep(sweeps, done, settings, definition, checkout, mode)


def _keep(
    sweeps: SweepStore,
    sweep: Sweep,
    settings: Settings,
    definition: SweepDefinition | None = None,
    checkout: Checkout | None = None,
    mode: str = "service",
) -> Sweep:
    """Store the finished sweep, diff it against the previous one, bisect the new and fixed findings of its
    repository's tests (their steps are jobs like the sweep's), and tell the webhook if it changed; unless another
    process has adopted it meanwhile (this one was silent too long): that one stores and tells, once."""
    try:
        if not sweeps.owns(sweep.id):
            log.warning(
                "sweep %s: not stored here: another process resumed it while this one was not heard from", sweep.id
            )
            return sweep
        sweeps.save(sweep)
        found = changes(sweeps, sweep)
        if checkout is not None and definition is not None:
            bisections = bisect_changes(sweep, found, sweeps, definition, checkout, settings, mode)
            if bisections:
                sweep = sweep.model_copy(update={"bisections": bisections})
                sweeps.save(sweep)
        notify(found, settings.sweep_webhook_url, sweep.bisections, dashboard=settings.api_url)
        return sweep
    finally:
        if checkout is not None:
            remove_checkout(checkout)


def run_and_store(
    definition_path: Path,
    store: Store,
    settings: Settings,
    runner: ProcessRunner,
    *,
    sweep_id: str | None = None,
    resume: dict[str, Any] | None = None,
) -> Sweep:
    """Run the definition, store it, diff it against the previous sweep, and tell the webhook if it changed.
    `resume` (with a runner whose jobs carry the sweep's label): what a resume needs, stored with the sweep."""
    sweeps = SweepStore(store)
    sweep_id = sweep_id or uuid.uuid4().hex
    sweeps.start(sweep_id, load_definition(definition_path).name, resume)
    sweep, keep = _run(sweeps, sweep_id, definition_path, runner, settings)
    return keep(sweep)


def scheduled_runner(
    definition_path: Path, store: Store, settings: Settings, enqueue: Callable[[Job], Any], slots: int
) -> tuple[str, ServiceRunner, dict[str, Any]]:
    """A new scheduled sweep's id, its runner (jobs labelled with the id) and what resuming it would need."""
    sweep_id = uuid.uuid4().hex
    runner = ServiceRunner(store, settings, enqueue, slots=slots, label=sweep_label(sweep_id))
    return sweep_id, runner, {"path": str(definition_path), "slots": slots}


def resume(
    client: redis.Redis, store: Store, settings: Settings, sweep_id: str, enqueue: Callable[[Job], Any]
) -> tuple[str, Sweep | None]:
    """("resumed", sweep) once the orphaned sweep is finished and stored, or ("skipped: why", None): another worker
    is resuming it, it is not (any more) an orphan, or another sweep of its definition is running."""
    if not client.set(resume_key(sweep_id), uuid.uuid4().hex, nx=True, ex=RESUME_CLAIM_S):
        return "skipped: another worker is resuming it", None
    sweeps = SweepStore(store)
    if sweep_id not in sweeps.orphans():
        return "skipped: it is not a sweep whose process has ended", None
    row = sweeps.row(sweep_id)
    if row is None or row.state != "running":  # removed, or failed meanwhile (waited too long: SweepStore.reap)
        return "skipped: it is not a sweep whose process has ended", None
    # The definition's running lock (schedule.start_once) may still be held for the ended process until its TTL:
    # it is taken over, unless another sweep of the definition is running.
    running = client.lock(running_key(row.definition), timeout=settings.sweep_lock_ttl_s, blocking=False)
    if not running.acquire():
        orphans = set(sweeps.orphans())
        live = [other for other in sweeps.running(row.definition) if other not in orphans]
        if live:
            return f"skipped: sweep {live[0]} of {row.definition} is running", None
        client.delete(running_key(row.definition))
        if not running.acquire():
            return f"skipped: a sweep of {row.definition} started meanwhile", None
    try:
        adopted = sweeps.adopt(sweep_id)
        if adopted is None:
            return "skipped: it is not a sweep whose process has ended", None
        if adopted.times > MAX_RESUMES:
            message = f"interrupted: {adopted.why}; not resumed again after {adopted.times - 1} resumes"
            sweeps.fail(sweep_id, message)
            return f"failed: {message}", None
        log.info("sweep %s of %s: resuming (%s)", sweep_id, adopted.definition, adopted.why)
        runner = ServiceRunner(
            store, settings, enqueue, slots=int(adopted.resume["slots"]), label=sweep_label(sweep_id)
        )
        sweep, keep = _run(sweeps, sweep_id, Path(adopted.resume["path"]), runner, settings, started=adopted.started_at)
        taken = runner.taken
        dropped = f", {len(taken.dropped)} no longer planned cancelled" if taken.dropped else ""
        times = f" (resume {adopted.times})" if adopted.times > 1 else ""
        message = (
            f"resumed{times} after {adopted.why}: {len(taken.found)} job(s) it had sent taken back, "
            f"{runner.sent} sent now{dropped}"
        )
        return "resumed", keep(sweep.model_copy(update={"message": message}))
    finally:
        try:
            running.release()
        except LockError as exc:  # expired and taken by another sweep meanwhile: leave theirs
            log.warning("sweep lock of %s not released: %s", row.definition, exc)
