"""The GPU lock: ordinary probes share a GPU, a timing probe gets it alone and is not starved by a stream of them."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.queue.registry import WorkerBeat
from cuprobe.service.worker.gpu_slots import Cancelled, GpuLock, service_slots
from tests.waiting import until


def _held_by_someone(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


class Holder(threading.Thread):
    """Takes the lock, records when, and holds it until released."""

    def __init__(self, lock: GpuLock, name: str, order: list[str], *, exclusive: bool) -> None:
        super().__init__(name=name, daemon=True)
        self.lock, self.order, self.exclusive = lock, order, exclusive
        self.acquired, self.release = threading.Event(), threading.Event()

    def run(self) -> None:
        with self.lock.held(exclusive=self.exclusive):
            self.order.append(self.name)
            self.acquired.set()
            self.release.wait(30)


def test_shared_holders_run_together(tmp_path: Path) -> None:
    lock, order = GpuLock(tmp_path, "GPU-aaaa"), []
    a, b = Holder(lock, "a", order, exclusive=False), Holder(lock, "b", order, exclusive=False)
    a.start()
    assert a.acquired.wait(10)
    b.start()
    assert b.acquired.wait(10), "a second ordinary probe must not wait for the first"
    a.release.set()
    b.release.set()


def test_timing_probe_waits_for_running_probes_and_later_ones_wait_for_it(tmp_path: Path) -> None:
    lock, order = GpuLock(tmp_path, "GPU-aaaa"), []
    running = Holder(lock, "running", order, exclusive=False)
    running.start()
    assert running.acquired.wait(10)
    timing = Holder(lock, "timing", order, exclusive=True)
    timing.start()
    until(lambda: _held_by_someone(lock.turnstile), "the timing probe holds the turnstile")
    later = Holder(lock, "later", order, exclusive=False)
    later.start()
    assert not timing.acquired.is_set() and not later.acquired.is_set()
    running.release.set()
    assert timing.acquired.wait(10)
    assert not later.acquired.is_set(), "an ordinary probe must not share the GPU with a timing probe"
    timing.release.set()
    assert later.acquired.wait(10)
    later.release.set()
    assert order == ["running", "timing", "later"]


def test_a_cancelled_wait_gives_up(tmp_path: Path) -> None:
    lock, order = GpuLock(tmp_path, "GPU-aaaa"), []
    holder = Holder(lock, "timing", order, exclusive=True)
    holder.start()
    assert holder.acquired.wait(10)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled), lock.held(exclusive=False, cancel=cancel):
        pass
    holder.release.set()
    holder.join(10)
    with lock.held(exclusive=False):  # released cleanly: free again
        pass


def test_different_gpus_do_not_share_a_lock(tmp_path: Path) -> None:
    order: list[str] = []
    first = Holder(GpuLock(tmp_path, "GPU-aaaa"), "a", order, exclusive=True)
    first.start()
    assert first.acquired.wait(10)
    with GpuLock(tmp_path, "GPU-bbbb").held(exclusive=True):
        pass
    first.release.set()


def _beat(name: str, queues: list[str], slots: int | None) -> WorkerBeat:
    arch = queues[0].split(".")[1] if queues[0].startswith("gpu.") else None
    return WorkerBeat(
        name=name, hostname="box", pid=1, pids=[1], queues=queues, arch=arch, slots=slots, started_at=0, beat_at=0
    )


def test_a_sweep_the_service_runs_is_planned_for_the_live_gpu_workers_slots() -> None:
    """The scheduled sweep runs on the CPU worker, which sees no GPU: it plans by what the GPU workers publish, the
    slots of the default architecture's workers together, not by the GPUs of its own process (there none: K = 1)."""
    settings = Settings(gpu_slots=0)
    workers = [
        _beat("gpu0-sm90", ["gpu.sm90", "gpu.sm90.sweep"], 4),
        _beat("gpu1-sm90", ["gpu.sm90", "gpu.sm90.sweep"], 3),
        _beat("gpu2-sm80", ["gpu.sm80", "gpu.sm80.sweep"], 8),  # another architecture's queues
        _beat("cpu", ["cpu", "cpu.sweep"], 16),
    ]
    assert service_slots(settings, workers) == (7, "2 live sm90 GPU worker(s) with 7 slot(s) in all")
    # None published (workers of an older version, or none alive): this host's K, as before.
    k, why = service_slots(settings.model_copy(update={"gpu_slots": 5}), [_beat("gpu0", ["gpu.sm90"], None)])
    assert (k, why) == (5, "no live sm90 GPU worker published its slots: this host's K")
