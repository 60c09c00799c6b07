"""How the API is served: uvicorn's h11 protocol with a deadline for each request's headers."""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

# A client gets this long to send a request's headers, from its connection or its first byte after the last
# response: uvicorn waits forever otherwise, and 500 sockets that never finish their headers hold the server.
HEADER_TIMEOUT_S = 10.0


class HeaderDeadline(H11Protocol):
    """H11Protocol that closes a connection whose request headers do not arrive within HEADER_TIMEOUT_S."""

    header_timeout_s = HEADER_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # still no complete request head
            self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_late(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
            self.transport.close()


def server_config(app: Any, host: str, port: int, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for the API: the h11 protocol with the header deadline."""
    return uvicorn.Config(app, host=host, port=port, http=HeaderDeadline, **options)
