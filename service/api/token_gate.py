"""The bearer token, checked before anything else reads the request: an unauthenticated client learns nothing about
the body it sent (its size, its JSON), whichever route it asked. The routes' own `Authorized` dependency stays (and
documents the scheme in OpenAPI); this answers first, with the same 401."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from cuprobe.service.api.schemas import ErrorBody
from cuprobe.service.web.auth import bearer_refusal

# The API's routes that need the token (the dashboard has its own login: service/web/auth.py; /health answers
# anyone, with less for those without the token).
GUARDED = ("/jobs", "/findings", "/probes", "/sweeps")


class TokenGate:
    """401 for a guarded path without the token, before the body is read (outermost middleware)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if self.token is not None and any(path == p or path.startswith(p + "/") for p in GUARDED):
            header = dict(scope.get("headers") or []).get(b"authorization")
            if (why := bearer_refusal(header.decode("latin-1") if header else None, self.token)) is not None:
                response = JSONResponse(
                    ErrorBody(error=why).model_dump(), status_code=401, headers={"WWW-Authenticate": "Bearer"}
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
