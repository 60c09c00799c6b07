"""GET /findings/{key}: a finding across time, every job and sweep where its signature appeared."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, status

from cuprobe.service.api.deps import Authorized, StoreDep
from cuprobe.service.db.history import FindingHistory, finding_history

router = APIRouter(prefix="/findings", tags=["findings"], dependencies=[Authorized])
KEY = Annotated[str, Path(pattern=r"^[0-9a-f]{16}$", description="signature_key of the finding's signature")]


@router.get("/{key}")
def get_history(key: KEY, store: StoreDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> FindingHistory:
    """First and last seen, how often, and the latest `limit` jobs and sweep cases that held the finding."""
    found = finding_history(store, key, limit)
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no job or sweep holds a finding with key {key}")
    return found
