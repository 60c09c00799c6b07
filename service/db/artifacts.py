"""Run artifacts kept for download (sanitizer XML, logs, result.json), under retention and size limits."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

# The only names served: nothing else under a job's directory is reachable over HTTP.
NAMES = ("run.xml", "stdout.txt", "stderr.txt", "result.json", "replay-growth.svg")


def artifact_path(workdir: Path, name: str) -> Path | None:
    """`workdir/name` when `name` is a served artifact and the file exists."""
    if name not in NAMES:
        return None
    path = workdir / name
    return path if path.is_file() else None


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def prune(jobs_dir: Path, retention_days: float, max_total_bytes: int) -> int:
    """Delete job directories older than the retention, then the oldest until under the byte cap."""
    if not jobs_dir.is_dir():
        return 0
    now = time.time()
    dirs = sorted((d for d in jobs_dir.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime)
    removed = 0
    kept: list[tuple[Path, int]] = []
    for d in dirs:
        if now - d.stat().st_mtime > retention_days * 86400:
            shutil.rmtree(d, ignore_errors=True)
            removed += 1
        else:
            kept.append((d, _size(d)))
    total = sum(size for _, size in kept)
    for d, size in kept:
        if total <= max_total_bytes:
            break
        shutil.rmtree(d, ignore_errors=True)
        total -= size
        removed += 1
    return removed
