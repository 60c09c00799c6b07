"""Which queues live workers serve now: the seam through which a job no worker can run is answered at once."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from cuprobe.service.queue.registry import WorkerRegistry

log = logging.getLogger(__name__)

# The queues live workers serve, or None when that is not known (then no job is refused for it).
ServedQueues = Callable[[], set[str] | None]


def served_reader(registry: WorkerRegistry) -> ServedQueues:
    """The queues live workers consume from, from the worker registry (None when Redis cannot be read); never a
    broker inspection. The API answers a job for a queue none serves at once; the reconciler expires such jobs."""

    def read() -> set[str] | None:
        return registry.view().served_queues

    return read


def after_grace(served: ServedQueues, grace_s: float) -> ServedQueues:
    """`served`, answering None for the first `grace_s` seconds: workers started with the API need time to appear."""
    started = time.monotonic()

    def read() -> set[str] | None:
        if time.monotonic() - started < grace_s:
            return None
        try:
            return served()
        except Exception as exc:  # cannot ask: the job waits for a worker, the reconciler still applies deadlines
            log.warning("cannot read which queues live workers serve: %s", exc)
            return None

    return read
