"""`cuprobe worker`: the worker command lines computed from a (fake) device list."""

from __future__ import annotations

from service.probing.gpus import GpuDevice
from service.worker.commands import worker_commands

DEVICES = [GpuDevice(0, "GPU-aaaa", "NVIDIA H200", "9.0"), GpuDevice(1, "GPU-bbbb", "NVIDIA A100-SXM4-80GB", "8.0")]


def _option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_one_pinned_worker_per_gpu_on_its_arch_queues_plus_a_cpu_worker() -> None:
    commands = worker_commands(DEVICES, python="/py", cpu_concurrency=3)
    assert [c.name for c in commands] == ["gpu0-sm90", "gpu1-sm80", "cpu"]
    gpu0, gpu1, cpu = commands
    assert gpu0.env["CUDA_VISIBLE_DEVICES"] == "GPU-aaaa" and gpu1.env["CUDA_VISIBLE_DEVICES"] == "GPU-bbbb"
    assert _option(gpu0.argv, "-Q") == "gpu.sm90,gpu.sm90.sweep"
    assert _option(gpu1.argv, "-Q") == "gpu.sm80,gpu.sm80.sweep"
    assert _option(gpu0.argv, "--concurrency") == "1"
    assert _option(cpu.argv, "-Q") == "cpu,cpu.sweep" and _option(cpu.argv, "--concurrency") == "3"
    assert cpu.env["CUDA_VISIBLE_DEVICES"] == ""
    for command in commands:
        assert command.argv[:6] == ["/py", "-m", "celery", "-A", "tasks.app", "worker"]
        assert "-E" in command.argv and _option(command.argv, "--prefetch-multiplier") == "1"
    assert len({_option(c.argv, "-n") for c in commands}) == 3


def test_no_gpu_means_only_the_cpu_worker() -> None:
    assert [c.name for c in worker_commands([], python="/py")] == ["cpu"]
    assert worker_commands([], python="/py", cpu=False) == []


def test_arch_from_compute_capability() -> None:
    assert GpuDevice(0, "u", "x", "10.0").arch == "sm100"
    assert GpuDevice(0, "u", "x", "8.6").arch == "sm86"
