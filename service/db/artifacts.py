"""Run artifacts kept for download (sanitizer XML, logs, result.json), under retention and size limits."""

from __future__ import annotations

import contextlib
import mimetypes
import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

# The only names served: nothing else under a job's directory is reachable over HTTP.
NAMES = ("run.xml", "stdout.txt", "stderr.txt", "result.json", "replay-growth.svg")
# Python's own table, not the machine's /etc/mime.types: the same content type on every server.
_TYPES = mimetypes.MimeTypes()
_TYPES.add_type("application/xml", ".xml")  # RFC 7303's type; the built-in table says text/xml


def content_type(name: str) -> str:
    """The Content-Type an artifact is served with."""
    return _TYPES.guess_type(name)[0] or "application/octet-stream"


def artifact_path(workdir: Path, name: str) -> Path | None:
    """`workdir/name` when `name` is a served artifact and a regular file there (never a symlink)."""
    if name not in NAMES:
        return None
    path = workdir / name
    try:
        mode = path.lstat().st_mode
    except OSError:
        return None
    return path if stat.S_ISREG(mode) else None


def open_artifact(workdir: Path, name: str) -> BinaryIO | None:
    """The artifact opened for reading without following a symlink (a probe may plant one); None if absent."""
    if name not in NAMES:
        return None
    try:
        fd = os.open(workdir / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # ELOOP: a symlink; ENOENT: not written
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device planted under the name
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


CHUNK = 1024 * 1024  # what a download streams at a time


def read_chunks(opened: BinaryIO) -> Iterator[bytes]:
    """An opened artifact, a chunk at a time, closed at the end (the body of a download)."""
    with opened:
        while chunk := opened.read(CHUNK):
            yield chunk


def write_artifact(path: Path, data: str | bytes) -> None:
    """Write a fresh regular file at `path`: whatever the probe left under that name (a symlink) is replaced, not
    followed."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def read_regular(path: Path) -> bytes:
    """The bytes of `path` if it is a regular file; OSError for a symlink or anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return f.read()


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
