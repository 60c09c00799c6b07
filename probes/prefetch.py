"""Importing torch on a second thread while a probe's first cases run (the harness's --prefetch-torch).

A cold probe process whose parameters use torch imports it when its first torch case comes, after its kernel cases:
under a sanitizer, eight such processes started together took about 2 s each for that import (docs/sweep.md,
"Session 28"). Started as the process starts, the import overlaps the cases before it; the probe's own `import
torch` then waits on Python's module lock until this one is done, and goes on exactly as it would have. Only the
import: nothing here touches CUDA (torch creates its CUDA state lazily, on the probe's thread).

While the import runs, Python's switch interval is shortened (`switch_ms`): a thread that gave up the GIL for a CUDA
call (a copy, a synchronize) waits up to one interval to get it back from a thread running Python, 5 ms by default,
several times per case; the probe's thread is the one that must not wait. The interval is put back as the import
ends.
"""

from __future__ import annotations

import sys
import threading
import time

# How long a process that ends before its torch cases waits for the import still running on the second thread.
FINISH_TIMEOUT_S = 120.0


class TorchPrefetch:
    """The import running on its own thread, and what it took."""

    def __init__(self, switch_ms: float) -> None:
        self.started = time.monotonic()
        self.took_s: float | None = None
        self.error: str | None = None
        self.switch_ms = switch_ms
        self._interval = sys.getswitchinterval()
        if switch_ms > 0:
            sys.setswitchinterval(switch_ms / 1000)
        self._thread = threading.Thread(target=self._import, name="cuprobe-torch-prefetch", daemon=True)
        self._thread.start()

    def _import(self) -> None:
        try:
            import torch  # noqa: F401  (the import is the work)
        except BaseException as exc:  # the probe's own import meets it again and reports it as a cold run would
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            sys.setswitchinterval(self._interval)
            self.took_s = time.monotonic() - self.started

    def finish(self, timeout_s: float = FINISH_TIMEOUT_S) -> None:
        """Wait for the import to end (at most `timeout_s`)."""
        self._thread.join(timeout_s)

    def report(self) -> dict[str, object]:
        """For result.json's context: how long the import took on its thread (None: not done when asked)."""
        out: dict[str, object] = {
            "took_s": None if self.took_s is None else round(self.took_s, 3),
            "switch_ms": self.switch_ms or None,
        }
        if self.error:
            out["error"] = self.error
        return out


def prefetch_torch(switch_ms: float) -> TorchPrefetch | None:
    """Start importing torch on a second thread, Python's switch interval `switch_ms` while it runs (0: left as it
    is); None where torch is imported already (a spare warmed to torch)."""
    if "torch" in sys.modules:
        return None
    return TorchPrefetch(switch_ms)
