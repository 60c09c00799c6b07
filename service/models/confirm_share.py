"""The ticket a sweep's jobs carry to share one set of the confirmation's re-runs on each host."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SHARE_KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"


class ConfirmShare(BaseModel):
    """The jobs of one sweep's grid (its batches) share one set of the confirmation's bare re-runs per host: the
    first of them to start there runs every case of the grid (`params`), the others decide their findings from the
    same runs. `params` must take in the job's own parameters (the probe's `merged`), or submission refuses it."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(pattern=SHARE_KEY_PATTERN, description="names the group: the same for every job that shares")
    params: dict[str, Any] = Field(description="the grid's parameters: every case of every job of the group")
    members: int = Field(ge=1, le=10_000, description="how many jobs share it")
