"""The environment fingerprint recorded with every result (read without importing torch or touching CUDA)."""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import NamedTuple

from service import __version__
from service.models import Environment

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _package(name: str) -> str | None:
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


def visible_rows(rows: list[list[str]], visible: str | None) -> list[list[str]]:
    """nvidia-smi rows (index, uuid, ...) that CUDA_VISIBLE_DEVICES lets CUDA see, in its order."""
    if visible is None:
        return rows
    picked = []
    for token in (t.strip() for t in visible.split(",")):
        match = [r for r in rows if token and (r[0] == token or r[1] == token or r[1].startswith(token))]
        if not match:
            break  # CUDA stops at the first entry it cannot resolve
        picked.append(match[0])
    return picked


@functools.lru_cache(maxsize=1)
def gpu_facts() -> GpuFacts:
    """The visible GPU from nvidia-smi (which ignores CUDA_VISIBLE_DEVICES, so it is applied here)."""
    query = _run(["nvidia-smi", "--query-gpu=index,uuid,name,driver_version", "--format=csv,noheader"])
    banner = _run(["nvidia-smi"]) or ""
    found = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    cuda = found.group(1) if found else None
    rows = [[part.strip() for part in line.split(",")] for line in (query or "").splitlines() if line.count(",") >= 3]
    rows = visible_rows(rows, os.environ.get("CUDA_VISIBLE_DEVICES"))
    if not rows:
        return GpuFacts(None, None, cuda, None)
    _index, uuid, name, driver = rows[0][:4]
    return GpuFacts(name, driver, cuda, uuid)


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
