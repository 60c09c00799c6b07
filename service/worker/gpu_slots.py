"""Sharing one GPU between K sanitizer processes: how many (K), and a lock that gives timing probes the whole GPU.

K is the GPU worker's Celery concurrency: each pool process runs one probe subprocess at a time, so up to K
sanitizer processes share the GPU. Most of a sanitizer run's cost is on the host (backtraces, XML), so K is
bounded by the host's cores per GPU and by the GPU memory each process may need.

Timing and autotuning probes (bare_only) must not share the GPU: they take the lock exclusively, every other
probe takes it shared. The lock is two flock(2) files per GPU — a turnstile every taker passes through first,
and the lock itself — so a waiting exclusive taker is not starved by a stream of shared ones.
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.probing.gpus import GpuDevice, visible_gpus
from cuprobe.service.queue.registry import WorkerBeat
from cuprobe.service.sanitizer.locate import SanitizerMissing, candidates, find_sanitizer, sanitizer_version
from cuprobe.service.worker.spare_registry import end_spares

# A sanitizer process running torch or pycuda kernels takes about 1-4 GiB of device memory (context, the
# tool's shadow memory, the probe's buffers); reserve 8 GiB each so K processes never exhaust the GPU.
GIB_PER_PROCESS = 8
# Measured on an H200 with 16 cores and compute-sanitizer 2025.3.1.0: with each sanitizer process bringing four bare
# re-runs of its cases (the confirmation) the 384-case grid took 16.0 s at K = 4 and 24.9 s at K = 8 (spares ready):
# past four the re-runs take the host's cores. Without them, 11.9, 7.3-7.8 and 11.0 s at K = 4, 8 and 16: past eight
# the sanitizer processes themselves take the 16 cores. CUPROBE_GPU_SLOTS sets more. A worker's gate jobs bring four
# re-runs each (a sweep's jobs of one grid share one set per host: service/probing/confirm/host.py); a local sweep's
# batches share one set (service/probing/confirm/shared.py), so a local sweep's K is capped as without the
# confirmation (host_slots): there K = 8 took 9.4-11.1 s cold against 11.2-12.8 s at K = 4 (docs/sweep.md, "K
# processes per GPU").
MAX_SLOTS = 4
MAX_SLOTS_UNCONFIRMED = 8
# compute-sanitizer versions whose targets stall when several run on one GPU: the target waits in cuCtxSynchronize
# for a kernel the GPU is not running, for good. Reproduced without cuprobe (tests/gpu/stall_repro.py, pycuda only,
# H200, driver 580.159.04): 2026.4.0.0 stalled 5 of 8 processes at K = 4 and 13 of 16 at K = 8; 2025.3.1.0 none of
# 8 at K = 4 and none of 8 at K = 8, nor in a sweep at K = 1-8. With such a version the default K is 1.
STALLS_TOGETHER = {"2026.4.0.0"}


def default_slots(
    cores: int, gpus: int, free_bytes: int | None, sanitizer: str | None = None, confirm: bool = True
) -> tuple[int, str]:
    """K for a GPU worker, and why: cores per GPU, capped by free memory / 8 GiB and by MAX_SLOTS (MAX_SLOTS_UNCONFIRMED
    with the confirmation off: no bare re-runs beside each process); 1 with a `sanitizer` version known to stall with
    several processes on one GPU."""
    per_gpu = max(1, cores // max(1, gpus))
    k, why = per_gpu, f"{cores} cores / {max(1, gpus)} GPU(s) = {per_gpu}"
    if free_bytes is not None:
        by_memory = max(1, free_bytes // (GIB_PER_PROCESS << 30))
        if by_memory < k:
            k, why = by_memory, f"{free_bytes / (1 << 30):.0f} GiB free / {GIB_PER_PROCESS} GiB per process"
    cap = MAX_SLOTS if confirm else MAX_SLOTS_UNCONFIRMED
    if k > cap:
        k, why = cap, f"{why}, capped at {cap}" + ("" if confirm else " (confirmation off)")
    if k > 1 and sanitizer in STALLS_TOGETHER:
        k, why = 1, (
            f"{why}; 1, because compute-sanitizer {sanitizer} stalls when several of its processes share a GPU "
            "(point CUPROBE_SANITIZER_PATH at another version, or set CUPROBE_GPU_SLOTS)"
        )
    return k, why


class Cancelled(Exception):
    """The wait for the GPU was cancelled (the job was cancelled or timed out while queued for the GPU)."""


def _acquire(fd: int, mode: int, cancel: threading.Event | None) -> None:
    # Non-blocking attempts in a loop: a blocked flock(2) could not notice a cancel.
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if cancel is not None and cancel.is_set():
                raise Cancelled("cancelled while waiting for the GPU") from None
            time.sleep(0.05)


def _safe(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", key) or "gpu"


def spares_folder(data_dir: Path, gpu: str) -> Path:
    """Where the GPU worker's spare processes for `gpu` keep their folders (service/worker/warm.py)."""
    return data_dir / "spares" / _safe(gpu)


class GpuLock:
    """Shared for ordinary probes, exclusive for timing probes, across every process using one GPU. `spares`: the
    GPU's spares folder; an exclusive taker ends the idle spare processes registered there before its body runs."""

    def __init__(self, directory: Path, gpu: str, spares: Path | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.turnstile = directory / f"{_safe(gpu)}.turnstile"
        self.lock = directory / f"{_safe(gpu)}.lock"
        self.spares = spares

    @contextmanager
    def held(self, *, exclusive: bool, cancel: threading.Event | None = None) -> Iterator[None]:
        """Hold the GPU shared or exclusively for the body (waits until it can, or until `cancel` is set)."""
        gate = os.open(self.turnstile, os.O_RDWR | os.O_CREAT, 0o600)
        lock = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _acquire(gate, fcntl.LOCK_EX, cancel)
            try:
                _acquire(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, cancel)
            finally:
                if not exclusive:  # an exclusive taker keeps the turnstile shut until it is done
                    fcntl.flock(gate, fcntl.LOCK_UN)
            if exclusive and self.spares is not None:
                # Spares start only under the shared lock, so none starts from here until the body is done.
                end_spares(self.spares)
            yield
        finally:
            os.close(lock)
            os.close(gate)


@contextmanager
def gpu_held(
    directory: Path,
    gpu: str | None,
    *,
    exclusive: bool,
    cancel: threading.Event | None = None,
    data_dir: Path | None = None,
) -> Iterator[None]:
    """The GPU lock for `gpu` (the worker's CUDA_VISIBLE_DEVICES), or nothing on a worker without a GPU. `data_dir`:
    the worker's, under which an exclusive taker finds the spare processes for this GPU it ends first."""
    if not gpu:
        yield
        return
    folder = spares_folder(data_dir, gpu) if data_dir is not None else None
    with GpuLock(directory, gpu, folder).held(exclusive=exclusive, cancel=cancel):
        yield


def located_version(sanitizer_path: Path | None) -> str | None:
    """The version of the compute-sanitizer runs here would use, or None (none found, or it does not answer)."""
    try:
        return sanitizer_version(find_sanitizer(sanitizer_path))
    except SanitizerMissing:
        return None


def steadier_sanitizer(sanitizer_path: Path | None) -> tuple[Path, str] | None:
    """Another compute-sanitizer found here, without the stall of the one cuprobe would use (when that one is in
    STALLS_TOGETHER and no path was set): its path and version, or None."""
    if sanitizer_path is not None or located_version(None) not in STALLS_TOGETHER:
        return None
    for _, path in candidates(None):
        version = sanitizer_version(path) if path.is_file() else None
        if version is not None and version not in STALLS_TOGETHER:
            return path, version
    return None


def slots_for(
    device: GpuDevice, gpus: int, setting: int, sanitizer: str | None = None, confirm: bool = True
) -> tuple[int, str]:
    """K sanitizer processes for `device`, and why: the setting when non-zero, else the host's default for this
    `sanitizer` version and whether findings are confirmed."""
    if setting:
        return setting, "CUPROBE_GPU_SLOTS"
    return default_slots(os.cpu_count() or 1, gpus, device.free_bytes, sanitizer, confirm)


def service_slots(settings: Settings, workers: list[WorkerBeat]) -> tuple[int, str]:
    """K for planning a sweep the service runs (the scheduled nightly), and why: the slots of the live GPU workers
    on the default architecture's queues together (its GPU jobs spread over them), else this host's (host_slots).
    Not this process's own GPUs first: the scheduled sweep runs on the CPU worker, which sees none."""
    arch = settings.default_gpu_arch
    serving = [w for w in workers if w.arch == arch and w.slots]
    if serving:
        total = sum(w.slots or 0 for w in serving)
        return total, f"{len(serving)} live {arch} GPU worker(s) with {total} slot(s) in all"
    return host_slots(settings), f"no live {arch} GPU worker published its slots: this host's K"


def host_slots(settings: Settings) -> int:
    """K for a sweep run here: the setting, else the first visible GPU's default (capped as without the
    confirmation: the sweep's batches of a grid share one set of re-runs, service/probing/confirm/shared.py), else 1
    (no GPU)."""
    if settings.gpu_slots:
        return settings.gpu_slots
    devices = visible_gpus()
    if not devices:
        return 1
    version = located_version(settings.sanitizer_path)
    return slots_for(devices[0], len(devices), 0, version, False)[0]
