"""The API token of a local `cuprobe up --command`: made once, kept in its data directory where only its user can
read it (mode 0600), and read from there by the CLI of the same user when no token is given."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

TOKEN_FILE = "api-token"


def make_local_token(data_dir: Path) -> str:
    """The token in data_dir/api-token, made (32 random bytes, URL-safe) when there is none this user alone can
    read; returns it."""
    kept = local_token(data_dir)
    if kept:
        return kept
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / TOKEN_FILE
    path.unlink(missing_ok=True)  # one others could read is never reused
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return token


def local_token(data_dir: Path) -> str | None:
    """The token a local `cuprobe up --command` made for `data_dir`, if this user owns the file and no one else may
    read it; else None."""
    path = data_dir / TOKEN_FILE
    try:
        info = path.stat()
        if info.st_uid != os.getuid() or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            return None
        return path.read_text().strip() or None
    except OSError:
        return None
