"""Which queues live workers serve now: the seam through which a job no worker can run is answered at once."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

# The queues live workers serve, or None when that is not known (then no job is refused for it).
ServedQueues = Callable[[], set[str] | None]


def served_queues() -> set[str] | None:
    """The queues live workers serve, from the cached worker registry; None while no registry is wired in.

    This is the one seam: an API built without its own `served_queues` answer calls this, and returning None
    keeps the old behaviour (a job waits for a worker until `unserved_after_s` or its deadline).
    """
    return None


def after_grace(served: ServedQueues, grace_s: float) -> ServedQueues:
    """`served`, answering None for the first `grace_s` seconds: workers started with the API need time to appear."""
    started = time.monotonic()

    def read() -> set[str] | None:
        if time.monotonic() - started < grace_s:
            return None
        try:
            return served()
        except Exception as exc:  # cannot ask: the job waits as before, the reconciler still applies deadlines
            log.warning("cannot read which queues live workers serve: %s", exc)
            return None

    return read
