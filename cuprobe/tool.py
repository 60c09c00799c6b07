"""The sanitizer tools a run can use (standard library only: the CLI names them without importing pydantic)."""

from __future__ import annotations

from enum import StrEnum


class Tool(StrEnum):
    """A compute-sanitizer tool, or `none` for a bare run."""

    NONE = "none"
    MEMCHECK = "memcheck"
    INITCHECK = "initcheck"
    RACECHECK = "racecheck"
    SYNCCHECK = "synccheck"
