"""GPU discovery without touching CUDA: NVML (nvidia-ml-py) where installed, else nvidia-smi; then CUDA_VISIBLE_DEVICES
applied by CUDA's rules, since neither NVML nor nvidia-smi applies it."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

SMI_QUERY = "--query-gpu=index,uuid,name,compute_cap,memory.free,driver_version"
SMI_FORMAT = "--format=csv,noheader,nounits"


@dataclass(frozen=True)
class GpuDevice:
    """One GPU as the driver lists it (NVML index order, the same as nvidia-smi's)."""

    index: int
    uuid: str
    name: str
    compute_cap: str  # "9.0"
    free_bytes: int | None = None  # free device memory when discovered (sizes the sanitizer slots)

    @property
    def arch(self) -> str:
        """`9.0` -> `sm90`."""
        major, _, minor = self.compute_cap.partition(".")
        return f"sm{major}{minor or '0'}"


@dataclass(frozen=True)
class GpuInventory:
    """Every GPU the driver has (whatever CUDA_VISIBLE_DEVICES says), the driver version and its CUDA version."""

    devices: list[GpuDevice] = field(default_factory=list)
    driver: str | None = None
    cuda: str | None = None


def _named(devices: Sequence[GpuDevice], entry: str) -> GpuDevice | None:
    """The device an entry of CUDA_VISIBLE_DEVICES names: an index, or a `GPU-` UUID or a unique prefix of one."""
    if entry.isdigit():
        return next((d for d in devices if d.index == int(entry)), None)
    if entry.startswith("GPU-"):
        matches = [d for d in devices if d.uuid.startswith(entry)]
        return matches[0] if len(matches) == 1 else None
    return None  # a MIG instance, -1, a typo: CUDA stops here


def visible(devices: Sequence[GpuDevice], setting: str | None) -> list[GpuDevice]:
    """The devices CUDA sees under CUDA_VISIBLE_DEVICES=`setting`, in its order: every device when unset, none when
    empty, and only the entries before the first one that names no device. A device listed twice makes the whole
    setting invalid: CUDA then sees no device at all (measured on the H200 with `0,0`)."""
    if setting is None:
        return list(devices)
    picked: list[GpuDevice] = []
    for entry in setting.split(","):
        device = _named(devices, entry.strip())
        if device is None:
            break
        if device in picked:
            return []
        picked.append(device)
    return picked


def parse_nvidia_smi(query: str, banner: str = "") -> GpuInventory:
    """The inventory from `nvidia-smi SMI_QUERY SMI_FORMAT` and plain `nvidia-smi` (its CUDA Version)."""
    devices, driver = [], None
    for line in query.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) >= 6 and parts[0].isdigit():
            name = ", ".join(parts[2:-3])  # a name with a comma in it keeps it
            free = int(parts[-2]) << 20 if parts[-2].isdigit() else None  # MiB ("[N/A]" on some boards)
            devices.append(GpuDevice(int(parts[0]), parts[1], name, parts[-3], free))
            driver = driver or parts[-1]
    found = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    return GpuInventory(devices, driver, found.group(1) if found else None)


def _run(cmd: list[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _from_nvidia_smi() -> GpuInventory:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return GpuInventory()
    return parse_nvidia_smi(_run([smi, SMI_QUERY, SMI_FORMAT]), _run([smi]))


def _from_nvml() -> GpuInventory | None:
    """The inventory from NVML, or None when nvidia-ml-py or the NVML library is missing."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            devices.append(
                GpuDevice(
                    index,
                    str(pynvml.nvmlDeviceGetUUID(handle)),
                    str(pynvml.nvmlDeviceGetName(handle)),
                    f"{major}.{minor}",
                    int(pynvml.nvmlDeviceGetMemoryInfo(handle).free),
                )
            )
        cuda = int(pynvml.nvmlSystemGetCudaDriverVersion())  # 13000 -> 13.0
        return GpuInventory(devices, str(pynvml.nvmlSystemGetDriverVersion()), f"{cuda // 1000}.{cuda % 1000 // 10}")
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()


@functools.lru_cache(maxsize=1)
def inventory() -> GpuInventory:
    """Every GPU on this machine, asked once per process: NVML first, nvidia-smi when NVML is not there."""
    return _from_nvml() or _from_nvidia_smi()


def visible_gpus() -> list[GpuDevice]:
    """The GPUs this process's CUDA would see ([] when none): one worker is started per device."""
    return visible(inventory().devices, os.environ.get("CUDA_VISIBLE_DEVICES"))
