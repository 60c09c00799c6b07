"""The environment fingerprint recorded with every result (read without importing torch or touching CUDA)."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import NamedTuple

from cuprobe import __version__
from cuprobe.service.models import Environment
from cuprobe.service.probing.gpus import inventory, visible

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _package(name: str) -> str | None:
    """The installed version of `name`, read again only when a directory on sys.path changed (an install or
    upgrade adds a .dist-info directory there): reading package metadata takes about a millisecond a package."""
    return _package_at(name, _path_stamp())


def _path_stamp() -> tuple[tuple[str, int], ...]:
    stamps = []
    for entry in sys.path:
        try:
            stamps.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            continue
    return tuple(stamps)


@functools.lru_cache(maxsize=32)
def _package_at(name: str, _stamp: tuple[tuple[str, int], ...]) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _run(cmd: list[str], cwd: Path | None = None) -> str | None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


class GpuFacts(NamedTuple):
    """The GPU this process may use (the first CUDA_VISIBLE_DEVICES names), its driver and CUDA version."""

    name: str | None
    driver: str | None
    cuda: str | None
    uuid: str | None


@functools.lru_cache(maxsize=1)
def gpu_facts() -> GpuFacts:
    """The first GPU CUDA_VISIBLE_DEVICES lets this process see (service.probing.gpus), its driver and CUDA."""
    found = inventory()
    devices = visible(found.devices, os.environ.get("CUDA_VISIBLE_DEVICES"))
    if not devices:
        return GpuFacts(None, None, found.cuda, None)
    return GpuFacts(devices[0].name, found.driver, found.cuda, devices[0].uuid)


@functools.lru_cache(maxsize=1)
def _commit() -> str | None:
    out = _run(["git", "rev-parse", "--short=12", "HEAD"], cwd=PROJECT_ROOT)
    return out.strip() if out else None


def fingerprint(sanitizer_version: str | None = None, sanitizer_path: str | None = None) -> Environment:
    gpu, driver, cuda, uuid = gpu_facts()
    return Environment(
        gpu=gpu,
        gpu_uuid=uuid,
        driver=driver,
        cuda=cuda,
        sanitizer=sanitizer_version,
        sanitizer_path=sanitizer_path,
        torch=_package("torch"),
        triton=_package("triton"),
        python=platform.python_version(),
        cuprobe=__version__,
        commit=_commit(),
    )
