"""Importing torch on a second thread while a probe's first cases run (the harness's --prefetch-torch).

A cold probe process whose parameters use torch imports it when its first torch case comes, after its kernel cases:
under a sanitizer, eight such processes started together take about 2 s each for that import. Started as the process
starts, the import overlaps the cases before it; the probe's own `import torch` then waits on Python's module lock
until this one is done, and goes on exactly as it would have. Only the import: nothing here touches CUDA (torch
creates its CUDA state lazily, on the probe's thread). At K = 8 the import leaves the critical path, but the kernel
cases beside it run slower, so about half of its time comes back as cases per GPU-hour (docs/sweep.md, "K processes
per GPU").
"""

from __future__ import annotations

import sys
import threading
import time

# How long a process that ends before its torch cases waits for the import still running on the second thread.
FINISH_TIMEOUT_S = 120.0


class TorchPrefetch:
    """The import running on its own thread, and what it took."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.took_s: float | None = None
        self.error: str | None = None
        self._thread = threading.Thread(target=self._import, name="cuprobe-torch-prefetch", daemon=True)
        self._thread.start()

    def _import(self) -> None:
        try:
            import torch  # noqa: F401  (the import is the work)
        except BaseException as exc:  # the probe's own import meets it again and reports it as a cold run would
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.took_s = time.monotonic() - self.started

    def finish(self, timeout_s: float = FINISH_TIMEOUT_S) -> None:
        """Wait for the import to end (at most `timeout_s`)."""
        self._thread.join(timeout_s)

    def report(self) -> dict[str, object]:
        """For result.json's context: how long the import took on its thread (None: not done when asked)."""
        out: dict[str, object] = {"took_s": None if self.took_s is None else round(self.took_s, 3)}
        if self.error:
            out["error"] = self.error
        return out


_started: TorchPrefetch | None = None


def prefetch_torch() -> TorchPrefetch | None:
    """Start importing torch on a second thread; None where it is imported already (a spare warmed to torch)."""
    global _started
    if "torch" in sys.modules:
        return None
    _started = TorchPrefetch()
    return _started


def wait_for_import() -> None:
    """Wait for an import this process started early to end. probes.torch_env calls it before it writes the
    environment torch reads (probes.allocator.prepare): glibc's setenv beside a getenv on another thread, as torch's
    libraries load, is not safe."""
    if _started is not None:
        _started.finish()
