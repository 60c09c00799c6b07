"""Jinja2 templates of the dashboard and the filters they use: times, ids, outcomes, as one person reads them."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from cuprobe import __version__
from cuprobe.service.db.tables import as_utc
from cuprobe.service.models import Outcome, signature_key

HERE = Path(__file__).parent
STATIC = HERE / "static"
templates = Jinja2Templates(directory=HERE / "templates")
GOOD = {"clean", "done"}
BAD = {o.value for o in Outcome if not o.ran} | {"failed", "NO"}


def when(moment: datetime | None) -> str:
    """`2026-05-01 13:04:05Z`, or `-`."""
    return as_utc(moment).strftime("%Y-%m-%d %H:%M:%SZ") if moment else "-"


def ago(moment: datetime | None, now: datetime | None = None) -> str:
    """How long ago, in the largest whole unit: `12 s ago`, `3 min ago`, `5 h ago`, `2 d ago`."""
    if moment is None:
        return "-"
    seconds = max(0, int(((now or datetime.now(UTC)) - as_utc(moment)).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def seconds_between(start: datetime | None, end: datetime | None) -> str:
    """`4.2 s`, `3 min 5 s`; `-` when either end is unknown."""
    if not start or not end:
        return "-"
    total = max(0.0, (as_utc(end) - as_utc(start)).total_seconds())
    if total < 60:
        return f"{total:.1f} s"
    minutes, rest = divmod(int(total), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def tone(value: str | None) -> str:
    """The CSS class for an outcome or state: good, bad, warn (findings) or busy (queued, running)."""
    if value in GOOD:
        return "good"
    if value in BAD:
        return "bad"
    if value in ("queued", "running"):
        return "busy"
    return "warn" if value else ""


def outcome_of(job: Any) -> str | None:
    """A job's outcome as the CLI and the API show it: one cancelled before any record was read is stored without an
    outcome, and shown `cancelled`."""
    return job.outcome or ("cancelled" if job.state == "cancelled" else None)


def titled(finding: Any) -> str:
    """A finding's title: its kind, and where, when it has a place (an expectation violation has none)."""
    where = finding.location()
    return finding.kind if where == "-" else f"{finding.kind} at {where}"


def set_only(value: Any) -> Any:
    """`value` without the keys left unset (None), at any depth: what a request asked for, not every default."""
    if isinstance(value, dict):
        return {k: set_only(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [set_only(v) for v in value]
    return value


def run_command(probe: str, tool: str | None, params: dict[str, Any], request: dict[str, Any] | None = None) -> str:
    """The `cuprobe run` line that runs the same probe here: its tool and parameters, and from the stored `request`
    its time limit, kernel filter, backtrace, confirmation and sanitizer options (a job's suppressions file is a name
    in the server's directory: the line names it as a path that must be there)."""
    request = request or {}
    argv = ["cuprobe", "run", probe]
    if tool:
        argv += ["--tool", tool]
    for name, value in params.items():
        argv += ["-p", f"{name}={value if isinstance(value, str) else json.dumps(value)}"]
    if request.get("timeout_s") is not None:
        argv += ["--timeout", f"{request['timeout_s']:g}"]
    for kernel in request.get("kernel_filter") or []:
        argv += ["--kernel", kernel]
    if request.get("show_backtrace"):
        argv += ["--show-backtrace", str(request["show_backtrace"])]
    if request.get("confirm") is not None:
        argv.append("--confirm" if request["confirm"] else "--no-confirm")
    options = dict(request.get("options") or {})
    if request.get("suppressions") and not options.get("suppressions"):
        options["suppressions"] = request["suppressions"]
    for name, value in options.items():
        flag = name.replace("_", "-")
        for one in value if isinstance(value, list) else [value]:
            if one is not None:
                argv += ["-S", f"{flag}={('yes' if one else 'no') if isinstance(one, bool) else one}"]
    return shlex.join(argv)


templates.env.filters.update(
    when=when,
    ago=ago,
    short=lambda value: str(value)[:8],
    tone=tone,
    outcome=outcome_of,
    titled=titled,
    set_only=set_only,
    key=signature_key,
    shell=shlex.join,
    compact=lambda value: json.dumps(value, sort_keys=True, default=str),
)
templates.env.globals.update(seconds_between=seconds_between, version=__version__, run_command=run_command)


def page(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> HTMLResponse:
    """Render template `name` for `request`; every page knows whether a token guards it (the logout button)."""
    settings = request.app.state.settings
    return templates.TemplateResponse(
        request,
        name,
        {"token_set": settings.api_token is not None, **context},
        status_code=status_code,
    )
