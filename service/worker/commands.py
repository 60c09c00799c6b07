"""`cuprobe worker`: a Celery worker per visible GPU, pinned with CUDA_VISIBLE_DEVICES, and a CPU worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType

from cuprobe import internal_env
from cuprobe.service.models.queues import CPU, gpu_queue, lane_queues
from cuprobe.service.probing.gpus import GpuDevice
from cuprobe.service.worker.gpu_slots import slots_for


@dataclass(frozen=True)
class WorkerCommand:
    """A worker process to start: its Celery node name, argv and the environment it adds."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def _celery_worker(python: str, name: str, queues: list[str], concurrency: int, loglevel: str) -> list[str]:
    return [
        python,
        "-m",
        "celery",
        "-A",
        "cuprobe.tasks.app",
        "worker",
        "-n",
        f"{name}@%h",
        "-Q",
        ",".join(queues),
        "--concurrency",
        str(concurrency),
        # One job per process at a time (acks_late + prefetch 1: nothing waits in a busy worker's buffer).
        "--prefetch-multiplier",
        "1",
        "-O",
        "fair",
        # Task events on, so Flower and `celery inspect` see the workers and their jobs.
        "-E",
        "--loglevel",
        loglevel,
    ]


def worker_commands(
    devices: list[GpuDevice],
    *,
    python: str | None = None,
    cpu_concurrency: int = 0,
    loglevel: str = "INFO",
    cpu: bool = True,
    gpu_slots: int = 0,
    sanitizer: str | None = None,
    confirm: bool = True,
) -> list[WorkerCommand]:
    """One worker per GPU on its architecture's queues (gate, then sweep), pinned to it; then a CPU worker.

    A GPU worker's concurrency is its K sanitizer slots (`gpu_slots`, or the default for this host and the
    `sanitizer` version its probes run under, and whether initcheck findings are confirmed)."""
    python = python or sys.executable
    commands = []
    for device in devices:
        name = f"gpu{device.index}-{device.arch}"
        k = slots_for(device, len(devices), gpu_slots, sanitizer, confirm)[0]
        commands.append(
            WorkerCommand(
                name=name,
                argv=_celery_worker(python, name, lane_queues(gpu_queue(device.arch)), k, loglevel),
                env={
                    "CUDA_VISIBLE_DEVICES": device.uuid or str(device.index),
                    internal_env.WORKER_GPU: device.name,
                },
            )
        )
    if cpu:
        concurrency = cpu_concurrency or os.cpu_count() or 1
        commands.append(
            WorkerCommand(
                name="cpu",
                argv=_celery_worker(python, "cpu", lane_queues(CPU), concurrency, loglevel),
                # CPU probes never see a GPU.
                env={"CUDA_VISIBLE_DEVICES": ""},
            )
        )
    return commands


def stop_all(procs: Sequence[subprocess.Popen[bytes]], timeout_s: float, sig: int = signal.SIGTERM) -> None:
    """Send `sig` to every process still running (SIGTERM: a Celery worker's warm shutdown, which lets running jobs
    finish; SIGQUIT: its cold shutdown, which stops them and so hands them back, service/worker/stopping.py), wait up
    to `timeout_s` for each, then SIGKILL the ones left."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(sig)
    for proc in procs:
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_workers(commands: list[WorkerCommand]) -> int:
    """Start every worker, forward SIGINT/SIGTERM to them, and stop them all when one exits."""
    procs = [subprocess.Popen(c.argv, env={**os.environ, **c.env}) for c in commands]

    def forward(signum: int, _frame: FrameType | None) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    try:
        while all(proc.poll() is None for proc in procs):
            time.sleep(0.5)
    finally:
        stop_all(procs, timeout_s=60)
    return max((proc.returncode or 0) for proc in procs)
