"""Build kernels/poison_alloc.c (torch's pluggable allocator that poisons every fresh block) with the C compiler."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "poison_alloc.c"
MALLOC, FREE = "cuprobe_poison_malloc", "cuprobe_poison_free"


class AllocatorBuildError(RuntimeError):
    """No C compiler, or the build failed: the message says which and how to fix it."""


def cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """cuprobe's cache (what it builds once and keeps): CUPROBE_CACHE_DIR, else ~/.cache/cuprobe."""
    return Path(env.get("CUPROBE_CACHE_DIR") or Path.home() / ".cache" / "cuprobe")


def build(compiler: str | None = None) -> Path:
    """The shared library for this source (built once per source version, shared by processes)."""
    source = SOURCE.read_bytes()
    target = cache_dir() / f"poison_alloc-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if target.exists():
        return target
    cc = compiler or os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise AllocatorBuildError(
            "no C compiler (cc or gcc) to build cuprobe's poisoning allocator for torch: install gcc on the worker"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        done = subprocess.run(
            [cc, "-shared", "-fPIC", "-O2", "-o", str(out), str(SOURCE), "-ldl"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise AllocatorBuildError(f"building {SOURCE.name} with {cc} failed: {done.stderr.strip()[-500:]}")
        os.replace(out, target)  # atomic: a concurrent build of the same source lands the same bytes
    return target
