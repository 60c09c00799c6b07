"""A finished run's result kept in its attempt's directory until the store has it (a store outage loses nothing)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from cuprobe.service.db.artifacts import read_regular, write_artifact
from cuprobe.service.models import RunResult

PENDING_NAME = "pending-result.json"


class PendingResult(BaseModel):
    """What the worker would have stored: the attempt, whether it was cancelled, and the result."""

    attempt: int
    cancelled: bool
    result: RunResult


def write_pending(workdir: Path, attempt: int, result: RunResult, *, cancelled: bool) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / PENDING_NAME
    pending = PendingResult(attempt=attempt, cancelled=cancelled, result=result)
    write_artifact(path, json.dumps(pending.model_dump(mode="json")))
    return path


def read_pending(workdir: Path) -> PendingResult | None:
    """The result the attempt in `workdir` left for the store; None when there is none (or it is unreadable)."""
    try:
        return PendingResult.model_validate_json(read_regular(workdir / PENDING_NAME))
    except (OSError, ValidationError, ValueError):
        return None


def clear_pending(workdir: Path) -> None:
    (workdir / PENDING_NAME).unlink(missing_ok=True)
