"""`cuprobe worker`: the worker command lines computed from a (fake) device list."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli import doctor as cli_doctor
from cuprobe.service.cli import main as cli_main
from cuprobe.service.config import Settings
from cuprobe.service.probing.gpus import GpuDevice
from cuprobe.service.sanitizer import locate
from cuprobe.service.sanitizer.locate import _version
from cuprobe.service.worker import gpu_slots
from cuprobe.service.worker.commands import worker_commands
from cuprobe.service.worker.gpu_slots import default_slots, located_version, slots_for, steadier_sanitizer
from tests.conftest import CAPTURES

DEVICES = [
    GpuDevice(0, "GPU-aaaa", "NVIDIA H200", "9.0", 143000 << 20),
    GpuDevice(1, "GPU-bbbb", "NVIDIA A100-SXM4-80GB", "8.0", 12000 << 20),
]


def _option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_one_pinned_worker_per_gpu_on_its_arch_queues_plus_a_cpu_worker() -> None:
    commands = worker_commands(DEVICES, python="/py", cpu_concurrency=3, gpu_slots=1)
    assert [c.name for c in commands] == ["gpu0-sm90", "gpu1-sm80", "cpu"]
    gpu0, gpu1, cpu = commands
    assert gpu0.env["CUDA_VISIBLE_DEVICES"] == "GPU-aaaa" and gpu1.env["CUDA_VISIBLE_DEVICES"] == "GPU-bbbb"
    assert _option(gpu0.argv, "-Q") == "gpu.sm90,gpu.sm90.sweep"
    assert _option(gpu1.argv, "-Q") == "gpu.sm80,gpu.sm80.sweep"
    assert _option(gpu0.argv, "--concurrency") == "1"
    assert _option(cpu.argv, "-Q") == "cpu,cpu.sweep" and _option(cpu.argv, "--concurrency") == "3"
    assert cpu.env["CUDA_VISIBLE_DEVICES"] == ""
    for command in commands:
        assert command.argv[:6] == ["/py", "-m", "celery", "-A", "cuprobe.tasks.app", "worker"]
        assert "-E" in command.argv and _option(command.argv, "--prefetch-multiplier") == "1"
    assert len({_option(c.argv, "-n") for c in commands}) == 3


def test_no_gpu_means_only_the_cpu_worker() -> None:
    assert [c.name for c in worker_commands([], python="/py")] == ["cpu"]
    assert worker_commands([], python="/py", cpu=False) == []


def test_arch_from_compute_capability() -> None:
    assert GpuDevice(0, "u", "x", "10.0").arch == "sm100"
    assert GpuDevice(0, "u", "x", "8.6").arch == "sm86"


def test_gpu_worker_concurrency_is_its_sanitizer_slots() -> None:
    gpu0, gpu1 = worker_commands(DEVICES, python="/py", cpu=False, gpu_slots=4)
    assert _option(gpu0.argv, "--concurrency") == "4" and _option(gpu1.argv, "--concurrency") == "4"


def test_default_slots_from_cores_per_gpu_and_free_memory() -> None:
    assert default_slots(16, 1, 140 << 30) == (4, "16 cores / 1 GPU(s) = 16, capped at 4")
    assert default_slots(16, 2, 140 << 30)[0] == 4
    assert default_slots(32, 8, 140 << 30)[0] == 4
    assert default_slots(8, 8, 140 << 30) == (1, "8 cores / 8 GPU(s) = 1")
    # 12 GiB free leaves room for one 8 GiB process
    assert default_slots(16, 1, 12 << 30) == (1, "12 GiB free / 8 GiB per process")
    assert default_slots(2, 1, None) == (2, "2 cores / 1 GPU(s) = 2")
    assert default_slots(3, 1, None) == (3, "3 cores / 1 GPU(s) = 3")
    assert default_slots(6, 1, None) == (4, "6 cores / 1 GPU(s) = 6, capped at 4")
    assert default_slots(1, 4, None)[0] == 1
    # Without the confirmation's four bare re-runs beside each sanitizer process, eight fit 16 cores (the H200's
    # 384-case grid: 7.3-7.8 s at K = 8 against 11.9 s at K = 4 and 11.0 s at K = 16, docs/sweep.md).
    unconfirmed = default_slots(16, 1, 140 << 30, confirm=False)
    assert unconfirmed == (8, "16 cores / 1 GPU(s) = 16, capped at 8 (confirmation off)")
    assert default_slots(6, 1, None, confirm=False)[0] == 6
    assert default_slots(16, 1, 40 << 30, confirm=False) == (5, "40 GiB free / 8 GiB per process")
    # the A100 above has 12,000 MiB free: one slot; the H200 as many as the cores allow
    h200, a100 = DEVICES
    assert a100.free_bytes == 12000 << 20
    assert slots_for(a100, 2, 0)[0] == 1
    assert slots_for(h200, 2, 3) == (3, "CUPROBE_GPU_SLOTS")


def test_a_sanitizer_that_stalls_with_company_gets_one_slot_and_says_why() -> None:
    k, why = default_slots(16, 1, 140 << 30, "2026.4.0.0")
    assert k == 1
    assert "compute-sanitizer 2026.4.0.0 stalls when several of its processes share a GPU" in why
    assert "CUPROBE_SANITIZER_PATH" in why and "CUPROBE_GPU_SLOTS" in why
    assert default_slots(16, 1, 140 << 30, "2025.3.1.0")[0] == 4  # the version measured without the stall
    h200 = DEVICES[0]
    assert slots_for(h200, 1, 0, "2026.4.0.0")[0] == 1
    assert slots_for(h200, 1, 3, "2026.4.0.0") == (3, "CUPROBE_GPU_SLOTS")  # the operator's setting still wins
    (gpu,) = worker_commands([h200], python="/py", cpu=False, sanitizer="2026.4.0.0")
    assert _option(gpu.argv, "--concurrency") == "1"


def _banner_sanitizer(where: Path, version: str) -> Path:
    """A stand-in that answers `--version` with a real captured banner (the CPU machine has no compute-sanitizer)."""
    where.mkdir(parents=True)
    path = where / "compute-sanitizer"
    banner = (CAPTURES / version / "version.txt").read_text()
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{banner}EOF\n")
    path.chmod(0o755)
    return path


def test_doctor_names_another_installed_sanitizer_without_the_stall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stalls = _banner_sanitizer(tmp_path / "wheel", "2026.4.0.0")
    steady = _banner_sanitizer(tmp_path / "toolkit", "2025.3.1.0")
    monkeypatch.setattr(locate, "_wheel_binaries", lambda: [stalls])
    monkeypatch.setenv("PATH", f"{steady.parent}:/usr/bin:/bin")
    _version.cache_clear()
    assert located_version(None) == "2026.4.0.0"  # the wheel is preferred, as on the H200
    assert steadier_sanitizer(None) == (steady, "2025.3.1.0")
    assert steadier_sanitizer(steady) is None  # a path the operator set is never second-guessed
    monkeypatch.setattr(gpu_slots, "visible_gpus", lambda: [DEVICES[0]])
    monkeypatch.setattr(cli_doctor, "visible_gpus", lambda: [DEVICES[0]])
    out = CliRunner().invoke(cli_main.app, ["doctor"], env={"COLUMNS": "400"}).stdout
    assert "gpu0: 1 sanitizer process(es) at once" in out
    k = slots_for(DEVICES[0], 1, 0, "2025.3.1.0")[0]  # this machine's cores decide it
    assert k > 1 and f"CUPROBE_SANITIZER_PATH={steady} gives {k} process(es) per GPU" in out


def test_a_local_sweep_is_capped_as_without_the_confirmation_when_its_batches_share_their_reruns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker's jobs each bring four re-runs (K capped at 4 with the confirmation on); a local sweep's batches of
    one grid share one set, so its K is capped at 8 as with the confirmation off (H200, 16 cores: docs/sweep.md)."""
    h200 = DEVICES[0]
    monkeypatch.setattr(gpu_slots, "visible_gpus", lambda: [h200])  # this CPU machine has no GPU (the only mock)
    monkeypatch.setattr(gpu_slots, "located_version", lambda path: "2025.3.1.0")
    monkeypatch.setattr(gpu_slots.os, "cpu_count", lambda: 16)
    assert slots_for(h200, 1, 0, "2025.3.1.0")[0] == 4  # the worker's
    assert gpu_slots.host_slots(Settings()) == 8
    assert gpu_slots.host_slots(Settings(confirm=False)) == 8
    assert gpu_slots.host_slots(Settings(gpu_slots=3)) == 3
    # `cuprobe doctor` says both: the worker's K, and a local sweep's.
    monkeypatch.setattr(cli_doctor, "visible_gpus", lambda: [h200])
    monkeypatch.setattr(cli_doctor, "located_version", lambda path: "2025.3.1.0")
    out = CliRunner().invoke(cli_main.app, ["doctor"], env={"COLUMNS": "400"}).stdout
    assert "gpu0: 4 sanitizer process(es) at once" in out
    assert "a sweep run here (cuprobe sweep run): 8 at once (its batches share one set" in out
    # ...and what a worker on the GPU does about warm starts (service/worker/warm.py).
    assert "a worker on it: warm starts: up to 4 spare process(es) readied for a sweep's next jobs" in out
    assert "each ended 30 s after its slot's last job if none takes it" in out
    off = CliRunner().invoke(cli_main.app, ["doctor"], env={"COLUMNS": "400", "CUPROBE_WARM_STARTS": "0"}).stdout
    assert "a worker on it: warm starts off (CUPROBE_WARM_STARTS)" in off
