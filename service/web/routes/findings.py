"""A finding across time: where its signature appeared, first and last seen, how often, and its source line."""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from cuprobe.service.db.history import finding_history
from cuprobe.service.web.auth import Viewer
from cuprobe.service.web.pages import PageNotFound, settings_of, store_of
from cuprobe.service.web.render import page
from cuprobe.service.web.source import excerpt

router = APIRouter(prefix="/ui/findings", dependencies=[Viewer], include_in_schema=False)
KEY = re.compile(r"[0-9a-f]{16}")
SHOWN = 200


@router.get("/{key}", response_class=HTMLResponse)
def finding_page(request: Request, key: str) -> HTMLResponse:
    if not KEY.fullmatch(key):
        raise PageNotFound(f"{key!r} is not a finding key (16 hex digits, as the links on job and sweep pages have)")
    history = finding_history(store_of(request), key, SHOWN)
    if history is None:
        raise PageNotFound(f"no job or sweep holds a finding with key {key}")
    finding = history.finding
    return page(
        request,
        "finding.html",
        {
            "history": history,
            "finding": finding,
            "source": excerpt(settings_of(request), finding.file, finding.line),
            "shown": SHOWN,
        },
    )
