"""SIGTERM (`kill`, a CI job's timeout, a service manager) stops a long CLI command as Ctrl-C does."""

from __future__ import annotations

import signal
from types import FrameType


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def sigterm_as_interrupt() -> None:
    """From now on SIGTERM raises KeyboardInterrupt in the main thread, so the command's own Ctrl-C handling (store
    the sweep as failed, stop the workers) runs for it too."""
    signal.signal(signal.SIGTERM, _interrupt)
