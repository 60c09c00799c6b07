"""Warm start: a probe process that gets ready before it knows its parameters, then waits for them.

The runner starts such a process (a spare, service/probing/spares.py) under the same sanitizer command as a run
while an earlier run is still going; the spare imports what the run will need and creates the CUDA context (the
slow part of a sanitizer process's start-up), then blocks reading its parameters from a FIFO. Everything after
that is exactly a cold run's: the same probe code, the same cases, one run per process.
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path
from typing import Literal

# What a spare does before its parameters come: import the probe only; also create the CUDA primary context;
# also import torch (probes whose parameters use it).
WarmLevel = Literal["import", "gpu", "torch"]
WARM_LEVELS: tuple[WarmLevel, ...] = ("import", "gpu", "torch")


class Warmed:
    """What the warm-up holds (the retained primary context) and how long it and the wait took."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.ready_after_s = 0.0
        self.waited_s = 0.0
        self.error: str | None = None
        self._device: ctypes.c_int | None = None
        self._libcuda: ctypes.CDLL | None = None

    def report(self) -> dict[str, object]:
        out: dict[str, object] = {"ready_after_s": round(self.ready_after_s, 3), "waited_s": round(self.waited_s, 3)}
        if self.error:
            out["warm_up_error"] = self.error
        return out

    def release(self) -> None:
        """Give back the primary context the warm-up retained, so it ends as a cold run's would."""
        if self._libcuda is None or self._device is None:
            return
        lib = self._libcuda
        release = getattr(lib, "cuDevicePrimaryCtxRelease_v2", None) or lib.cuDevicePrimaryCtxRelease
        release(self._device)
        self._libcuda = self._device = None


def warm_up(level: WarmLevel) -> Warmed:
    """Do the start-up a run at `level` needs. A failure is kept, not raised: the run meets it again and reports it
    as a cold run would."""
    warmed = Warmed()
    try:
        if level == "torch":
            import torch  # noqa: F401  (the import is the work)
        if level in ("gpu", "torch"):
            _retain_primary_context(warmed)
    except Exception as exc:  # the run itself meets it again and reports it
        warmed.error = f"{type(exc).__name__}: {exc}"
    warmed.ready_after_s = time.monotonic() - warmed.started
    return warmed


def _retain_primary_context(warmed: Warmed) -> None:
    """Device 0's primary context, created now (pycuda's probes and torch use the same one)."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return  # no driver: the run says `unavailable` itself
    if (code := libcuda.cuInit(0)) != 0:
        raise RuntimeError(f"cuInit returned {code}")
    device, context = ctypes.c_int(0), ctypes.c_void_p()
    if (code := libcuda.cuDeviceGet(ctypes.byref(device), 0)) != 0:
        raise RuntimeError(f"cuDeviceGet returned {code}")
    if (code := libcuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)) != 0:
        raise RuntimeError(f"cuDevicePrimaryCtxRetain returned {code}")
    warmed._libcuda, warmed._device = libcuda, device


# Written beside the FIFO once the warm-up is done: the runner can tell a ready spare from one still starting.
READY_NAME = "ready"


def read_params(fifo: Path, warmed: Warmed) -> str:
    """Say ready, then block until the runner writes this run's parameters (JSON) into `fifo` and closes it."""
    (fifo.parent / READY_NAME).write_text(f"{warmed.ready_after_s:.3f}\n", encoding="utf-8")
    waiting = time.monotonic()
    text = fifo.read_text(encoding="utf-8")
    warmed.waited_s = time.monotonic() - waiting
    return text
