"""The source lines around a finding, when its file is found under a known source root (never outside one)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.probing.environment import PROJECT_ROOT

CONTEXT = 4
MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class SourceExcerpt:
    """Lines `first`.. of `path`, the finding's own line marked."""

    path: Path
    first: int
    lines: list[str]
    line: int


def roots(settings: Settings) -> list[Path]:
    """The roots finding paths are relative to, as a worker has them: the configured ones, the project, the cwd."""
    return [Path(r) for r in settings.source_roots] + [PROJECT_ROOT, Path(os.getcwd())]


def excerpt(settings: Settings, file: str | None, line: int | None) -> SourceExcerpt | None:
    """The lines around `file`:`line` under the first root that holds the file; None when none does."""
    if not file or not line or line < 1:
        return None
    for root in roots(settings):
        try:
            base = root.resolve()
            candidate = (base / file).resolve()
        except (OSError, RuntimeError):
            continue
        if not candidate.is_relative_to(base) or not candidate.is_file() or candidate.stat().st_size > MAX_BYTES:
            continue
        try:
            text = candidate.read_text(errors="replace").splitlines()
        except OSError:
            continue
        if line > len(text):
            continue
        first = max(1, line - CONTEXT)
        return SourceExcerpt(candidate, first, text[first - 1 : line + CONTEXT], line)
    return None
