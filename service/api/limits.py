"""An ASGI middleware refusing request bodies larger than the configured cap with 413."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cuprobe.service.models import SCHEMA_VERSION


class BodySizeLimit:
    """Refuses bodies over `limit` bytes: by Content-Length, else by reading at most that much first."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            if declared.isdigit() and int(declared) > self.limit:
                await self._refuse(send)
                return
            await self.app(scope, receive, send)
            return
        # No Content-Length (chunked): buffer up to the cap, then replay to the app.
        buffered: list[Message] = []
        size = 0
        while True:
            message = await receive()
            buffered.append(message)
            size += len(message.get("body", b""))
            if size > self.limit:
                await self._refuse(send)
                return
            if message["type"] != "http.request" or not message.get("more_body", False):
                break

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = {
            "schema_version": SCHEMA_VERSION,
            "error": f"request body larger than this server's limit of {self.limit} bytes",
            "field": "body",
        }
        raw = json.dumps(body).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": raw})
