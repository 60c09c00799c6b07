"""Warm starts on a GPU worker: a pool process readies a spare for its next job where a sweep says one like it comes.

A local sweep readies spare processes for its later waves (service/sweep/execute.py `LocalRunner`). Through the
service each process of a sweep is a job, and the jobs of one wave run in the GPU worker's K pool processes; a sweep
marks the jobs that a later job like them follows (`JobSpec.warm_next`: the sweep knows its plan, a worker does not).
The pool process that runs such a job asks for a spare of the same sanitizer command, started once the job has begun
its cases, and hands the next matching job it gets to it (service/probing/spares.py). One spare per pool process
at most; a spare not taken within `worker_spare_idle_s` of the process's last job ends, so an idle worker holds no
CUDA context for long. Jobs without the mark ask for none: a sweep whose processes all fit in one wave makes none.

Spares start under the GPU lock (shared, as any probe), and register their process group in the GPU's spares
folder: a timing probe that takes the GPU exclusively ends every spare on it first (gpu_slots.GpuLock), and no
spare starts while it holds the GPU.
"""

from __future__ import annotations

import atexit
import os
import shutil
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.probing.spares import Spare, Spares
from cuprobe.service.worker.gpu_slots import gpu_held, spares_folder
from cuprobe.service.worker.spare_registry import register

# How long a job waits for the spare its pool process's last job asked for to be started (a process started, not
# ready: the job then waits on it as it would on its own start-up). Its last job asks once it has begun its cases;
# a job shorter than the spare's preparation (admission, its command) can end first.
TAKE_WAIT_S = 2.0

_pool: tuple[int, Spares, threading.Event] | None = None
_lock = threading.Lock()


def worker_spares(settings: Settings, gpu: str | None) -> Spares | None:
    """This pool process's spares (made on first use), or None: warm starts off, or a worker without a GPU."""
    global _pool
    if not settings.warm_starts or not gpu:
        return None
    with _lock:
        if _pool is None or _pool[0] != os.getpid():  # a forked child does not use its parent's pool
            folder = spares_folder(settings.data_dir, gpu)
            _clear_dead(folder)
            root = folder / f"worker-{os.getpid()}"
            shutil.rmtree(root, ignore_errors=True)  # left by an earlier process with this pid
            closing = threading.Event()
            start = partial(_start_holding_gpu, settings.data_dir / "locks", gpu, closing)
            pool = Spares(
                root, 1, budget=0, idle_s=settings.worker_spare_idle_s, start=start, take_wait_s=TAKE_WAIT_S
            )
            if _pool is None:
                atexit.register(close_worker_spares)
            _pool = (os.getpid(), pool, closing)
        return _pool[1]


def _clear_dead(folder: Path) -> None:
    """Remove the spare folders of pool processes that have ended (killed, or a worker that crashed): their spares
    died with them (each dies with the process that started it), their files stay behind otherwise."""
    for owned in folder.glob("worker-*"):
        pid = owned.name.removeprefix("worker-")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(owned, ignore_errors=True)


def close_worker_spares() -> None:
    """End this process's spares and its pool (at exit; a spare also dies with the process that started it)."""
    global _pool
    with _lock:
        held, _pool = _pool, None
    if held is not None and held[0] == os.getpid():
        held[2].set()
        held[1].close()


def _start_holding_gpu(
    locks: Path, gpu: str, closing: threading.Event, make: Callable[[], Spare | None]
) -> Spare | None:
    """Start a spare while holding the GPU shared (never beside a timing probe), registered before the lock goes."""
    with gpu_held(locks, gpu, exclusive=False, cancel=closing):
        spare = make()
        if spare is not None:
            register(spare)
        return spare


def warm_line(settings: Settings, slots: int) -> str:
    """What a GPU worker with `slots` pool processes does about warm starts, for its start-up line and the doctor."""
    if not settings.warm_starts:
        return "warm starts off (CUPROBE_WARM_STARTS): every job starts its own sanitizer process"
    return (
        f"warm starts: up to {slots} spare process(es) readied for a sweep's next jobs, each ended "
        f"{settings.worker_spare_idle_s:g} s after its slot's last job if none takes it"
    )
