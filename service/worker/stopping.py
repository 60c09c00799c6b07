"""A worker that stops gracefully while a job runs hands the job back instead of losing an attempt of it.

Celery's pool processes end on SIGTERM (billiard raises SystemExit in the task): a service manager stopping the
worker's process group, Celery's cold shutdown (SIGQUIT, a second Ctrl-C) cancelling running tasks, `cuprobe up`
stopping. The running attempt was then lost with its worker, nothing written, and counted in max_attempts, so a job
could end `crashed` for restarts alone. Now a SIGTERM that comes while a pool process runs a job is held back
(`sigterm_deferred`, around the task): execute_job stops the probe, hands the job back (store.hand_back: queued
again, that attempt not counted, its run marked handed back), and the held SIGTERM then ends the process.
SIGKILL (the OOM killer, a stop that timed out) cannot be held back: that attempt counts, as any lost worker's does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from types import FrameType

from sqlalchemy.exc import SQLAlchemyError

from cuprobe.service.config import Settings
from cuprobe.service.db.artifacts import write_artifact
from cuprobe.service.db.store import Store, utcnow

log = logging.getLogger(__name__)
# Written into a handed-back attempt's directory: its files are those of a stopped run, not a result.
NOTE_NAME = "handed-back.txt"


@contextmanager
def sigterm_deferred() -> Iterator[threading.Event]:
    """While the block runs, a SIGTERM to this process sets the event it yields instead of acting; once the block has
    ended, that SIGTERM is delivered again to whatever handled SIGTERM before (in a Celery pool process, billiard's,
    which ends the process). Outside the main thread, where no handler can be set, nothing is deferred."""
    requested = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield requested
        return

    def note(_signum: int, _frame: FrameType | None) -> None:
        requested.set()  # nothing else here: the handler may run in the middle of a store write

    previous = signal.signal(signal.SIGTERM, note)
    try:
        yield requested
    finally:
        signal.signal(signal.SIGTERM, previous)
        if requested.is_set():
            os.kill(os.getpid(), signal.SIGTERM)


def hand_back(store: Store, settings: Settings, job_id: str, attempt: int, workdir: Path) -> bool:
    """Queue job `job_id` again without counting `attempt`, whose probe has been stopped; False when it was not
    handed back (the job moved on, it was handed back max_hand_backs times, the store did not answer): the attempt then
    counts, as one lost with its worker."""
    message = (
        f"handed back: its worker stopped (SIGTERM) during attempt {attempt}; it runs again, and that attempt does "
        "not count against max_attempts"
    )
    try:
        handed = store.hand_back(
            job_id,
            attempt,
            message,
            utcnow() + timedelta(seconds=settings.queue_deadline_s),
            limit=settings.max_hand_backs,
        )
    except SQLAlchemyError as exc:  # a stopping worker does not wait out a store outage
        log.error("job %s: could not hand attempt %d back (%s); it counts as lost", job_id, attempt, exc)
        return False
    if not handed:
        log.warning("job %s: attempt %d not handed back (moved on, or handed back too often)", job_id, attempt)
        return False
    log.warning("job %s: worker stopping, attempt %d stopped and handed back", job_id, attempt)
    with contextlib.suppress(OSError):  # the note is for a reader of the directory; the store has said it already
        write_artifact(workdir / NOTE_NAME, message + "\n")  # replaces, never follows, what the probe left there
    return True
