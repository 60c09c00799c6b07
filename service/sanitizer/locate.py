"""Find the compute-sanitizer binary (setting, PyPI wheel, PATH, CUDA_HOME) and read its version."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

HOW_TO_GET = (
    "install the pinned PyPI sanitizer (pip install 'cuprobe[gpu]', which brings nvidia-cuda-sanitizer-api), "
    "or the CUDA toolkit, or set CUPROBE_SANITIZER_PATH"
)


class SanitizerMissing(LookupError):
    """No compute-sanitizer binary could be found; the message says where cuprobe looked."""


def _wheel_binaries() -> list[Path]:
    """compute-sanitizer shipped in the nvidia-cuda-sanitizer-api wheel (nvidia/cu*/bin/)."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    found: list[Path] = []
    for base in spec.submodule_search_locations:
        found += sorted(Path(base).glob("*/bin/compute-sanitizer"), reverse=True)
        found += sorted(Path(base).glob("*/compute-sanitizer/compute-sanitizer"), reverse=True)
    return found


def candidates(setting: Path | None) -> list[tuple[str, Path]]:
    """Where cuprobe looks, in order, each with the name of the source."""
    out: list[tuple[str, Path]] = []
    if setting is not None:
        out.append(("CUPROBE_SANITIZER_PATH", setting))
        return out  # an explicit setting is never second-guessed
    out += [("PyPI nvidia-cuda-sanitizer-api", p) for p in _wheel_binaries()]
    if which := shutil.which("compute-sanitizer"):
        out.append(("PATH", Path(which)))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if home := os.environ.get(var):
            out.append((var, Path(home) / "bin" / "compute-sanitizer"))
    out.append(("default toolkit", Path("/usr/local/cuda/bin/compute-sanitizer")))
    return out


def find_sanitizer(setting: Path | None = None) -> Path:
    """The first executable candidate, preferring the pinned PyPI wheel over the toolkit's (reproducible)."""
    looked = candidates(setting)
    for _, path in looked:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    where = "; ".join(f"{source}: {path}" for source, path in looked)
    raise SanitizerMissing(f"compute-sanitizer not found (looked at {where}); {HOW_TO_GET}")


def sanitizer_version(path: Path) -> str | None:
    """e.g. '2026.4.0.0' from `compute-sanitizer --version`, None if it does not answer."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return _version(path, stat.st_mtime_ns, stat.st_size)  # an upgraded binary is asked again


@functools.lru_cache(maxsize=16)
def _version(path: Path, mtime_ns: int, size: int) -> str | None:
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"Version (\d+(?:\.\d+)+)", out)
    return match.group(1) if match else None
