"""Waiting in tests for something another thread or process does, with a bound (a loaded machine is slow, never
stuck): a timeout fails the test, naming what did not happen."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(condition: Callable[[], object], what: str, timeout: float = 30.0, look_s: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(look_s)
