"""The environment fingerprint recorded with every result (read without importing torch or touching CUDA)."""

from __future__ import annotations

import functools
import platform
import re
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from service import __version__
from service.models import Environment

PROJECT_ROOT = Path(__file__).resolve().parent.parent


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


@functools.lru_cache(maxsize=1)
def gpu_facts() -> tuple[str | None, str | None, str | None]:
    """(GPU name, driver version, CUDA version) from nvidia-smi; Nones where there is none."""
    query = _run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    banner = _run(["nvidia-smi"]) or ""
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    if not query:
        return None, None, cuda.group(1) if cuda else None
    name, _, driver = query.splitlines()[0].partition(",")
    return name.strip(), driver.strip(), cuda.group(1) if cuda else None


@functools.lru_cache(maxsize=1)
def _commit() -> str | None:
    out = _run(["git", "rev-parse", "--short=12", "HEAD"], cwd=PROJECT_ROOT)
    return out.strip() if out else None


def fingerprint(sanitizer_version: str | None = None, sanitizer_path: str | None = None) -> Environment:
    gpu, driver, cuda = gpu_facts()
    return Environment(
        gpu=gpu,
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
