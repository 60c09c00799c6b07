"""CUDA access for probes through pycuda; says `unavailable` plainly when it cannot be had."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cuprobe.probes.base import ProbeUnavailable, Recorder

# How a probe's host thread waits for the GPU (the primary context's scheduling flag). cuprobe leaves it to the
# driver (`auto`): `blocking` cut a sweep's CPU seconds by a third at the same wall time on the H200, but with
# `blocking` or `yield` two sweeps of 23 had a process stall until the watchdog stopped it, none of 37 with `auto`.
# A result records the flag its context had (probe_context.cuda_schedule).
SCHEDULES = {"auto": 0, "spin": 1, "yield": 2, "blocking": 4}


# The primary context's scheduling flag as read while cuda_context held it. Read after the probe instead, on the
# H200, it came back as the driver's default in a run that had set `blocking`.
_held: dict[str, int | None] = {}


def schedule_name() -> str | None:
    """How this process waited for the GPU (SCHEDULES' names: its primary context's flag while cuda_context held
    it), or None where no context was held or the flag could not be read."""
    flag = _held.get("flag")
    return next((name for name, value in SCHEDULES.items() if value == flag), None)


def schedule_flag() -> int | None:
    """The scheduling flag device 0's primary context has (SCHEDULES' values), or None where none can be read."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    device, flags, active = ctypes.c_int(0), ctypes.c_uint(0), ctypes.c_int(0)
    if libcuda.cuInit(0) != 0 or libcuda.cuDeviceGet(ctypes.byref(device), 0) != 0:
        return None
    if libcuda.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active)) != 0:
        return None
    return flags.value & 7


def cuda_device_count() -> int:
    """Number of CUDA devices the driver reports, 0 when there is no driver (touches CUDA: probes only)."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    if libcuda.cuInit(0) != 0:
        return 0
    count = ctypes.c_int(0)
    if libcuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def cuda_devices() -> dict[str, object]:
    """The CUDA devices this process sees: their count and each one's UUID as nvidia-smi prints it.

    Recorded with every GPU probe's result, so the store shows which GPU ran a job and that it saw
    exactly one (a worker pinned with CUDA_VISIBLE_DEVICES).
    """
    count = cuda_device_count()
    if count == 0:
        return {"count": 0, "uuids": []}
    libcuda = ctypes.CDLL("libcuda.so.1")
    uuids: list[str | None] = []
    for ordinal in range(count):
        device, raw = ctypes.c_int(0), ctypes.create_string_buffer(16)
        if libcuda.cuDeviceGet(ctypes.byref(device), ordinal) != 0 or libcuda.cuDeviceGetUuid(raw, device) != 0:
            uuids.append(None)
            continue
        h = raw.raw.hex()
        uuids.append(f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return {"count": len(uuids), "uuids": uuids}


# Device 0's primary context, retained once and held for the process's life. Released after each block instead, the
# last reference destroyed it and the next block (the confirmer's control cases after the probe's own) made a new
# one: on the H200 that cost a bare re-run about 1.5 s at the end of its cases and 0.6 s before its control cases.
_primary: dict[str, Any] = {}


@contextmanager
def cuda_context() -> Iterator[Any]:
    """Device 0's primary context through pycuda, pushed for the block (torch uses the same one); it stays retained
    after the block, for the next one, unless the block left it broken (a sticky error)."""
    try:
        import pycuda.driver as cuda
    except ImportError as exc:
        raise ProbeUnavailable(
            "pycuda is not installed: install the gpu extra (pip install 'cuprobe[gpu]') on a machine "
            "with the CUDA driver"
        ) from exc
    if cuda_device_count() == 0:
        raise ProbeUnavailable("no CUDA device: run this probe on a GPU worker (queue gpu.smXX)")
    cuda.init()
    context = _primary.get("context")
    if context is None:
        # The primary context, not a new one: torch in the same process then sees the same address space,
        # and buffers of both stay valid together.
        context = _primary["context"] = cuda.Device(0).retain_primary_context()
    context.push()
    _held.setdefault("flag", schedule_flag())
    try:
        yield cuda
    finally:
        release(cuda, context)


def release(cuda: Any, context: Any) -> None:
    """Pop `context` after a block; where the block left it broken (a precise memcheck error makes a context's
    error sticky), let it go too, so that a later block gets a new one instead of the same error."""
    try:
        cuda.Context.synchronize()
        broken = False
    except cuda.Error:
        broken = True
    try:
        context.pop()
        if broken:
            _primary.pop("context", None)
            context.detach()
    except cuda.Error:
        _primary.pop("context", None)  # the sanitizer already has the real error


def device_alloc(cuda: Any, nbytes: int, recorder: Recorder) -> Any:
    """cuda.mem_alloc(nbytes), filled with the poison byte in the confirmer's poisoned runs (never otherwise)."""
    buf = cuda.mem_alloc(max(nbytes, 1))
    fill = recorder.poison.plan.fill
    if fill is not None:
        cuda.memset_d8(buf, fill, max(nbytes, 1))
        cuda.Context.synchronize()
    return buf


def device_reader(cuda: Any, buf: Any, nbytes: int) -> Callable[[], Any]:
    """Reads `nbytes` of device buffer `buf` back as bytes, when called (a checkpoint)."""

    def read() -> Any:
        import numpy as np

        out = np.empty(nbytes, dtype=np.uint8)
        cuda.Context.synchronize()
        cuda.memcpy_dtoh(out, buf)
        return out

    return read
