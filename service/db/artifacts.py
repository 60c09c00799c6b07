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


# What a job can reach: its job directory `jobs/<id>/` and the attempt folders in it. The jobs directory above is
# the operator's (it may be reached through a link they made); below it nothing is followed.
UNTRUSTED_DEPTH = 2


def _open_beneath(workdir: Path, name: str) -> int:
    """A read-only descriptor of `workdir/name`, every component below the jobs directory opened without following
    a link (openat with O_NOFOLLOW, one component at a time); OSError for a link anywhere there, or anything not
    a regular file with one name (a hard link to a file elsewhere is refused too)."""
    parts = [*workdir.parts[-UNTRUSTED_DEPTH:], name]
    root = workdir.parents[UNTRUSTED_DEPTH - 1]
    if any(part in ("", ".", "..") or os.sep in part for part in parts):
        raise OSError(f"{workdir / name}: not a plain path below the jobs directory")
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = inner
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:  # a FIFO or device planted; a hard link
        os.close(fd)
        raise OSError(f"{workdir / name}: not a regular file with a single name")
    return fd


def artifact_path(workdir: Path, name: str) -> Path | None:
    """`workdir/name` when `name` is a served artifact that open_artifact would serve."""
    opened = open_artifact(workdir, name)
    if opened is None:
        return None
    opened.close()
    return workdir / name


def open_artifact(workdir: Path, name: str) -> BinaryIO | None:
    """The artifact opened for reading, no link followed below the jobs directory (a probe may plant one, or make
    its attempt folder a link), and no hard link; None if absent or refused."""
    if name not in NAMES or len(workdir.parts) <= UNTRUSTED_DEPTH:
        return None
    try:
        return os.fdopen(_open_beneath(workdir, name), "rb")
    except OSError:  # ELOOP/ENOTDIR: a link; ENOENT: not written; not a regular file
        return None


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
    """The bytes of `path` if it is a regular file with one name; OSError for a symlink, a hard link or anything
    else."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise OSError(f"{path.name} is not a regular file with a single name")
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
