"""The served API closes a connection whose request headers never finish: 500 such sockets held it open before."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from cuprobe.service.api import create_app
from cuprobe.service.api.server import HeaderDeadline, server_config
from cuprobe.service.config import Settings


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(HeaderDeadline, "header_timeout_s", 1.0)
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'db.sqlite'}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(server_config(create_app(settings, reconciler=False), "127.0.0.1", port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield port
    server.should_exit = True
    thread.join(10)


def _closed_after(conn: socket.socket, limit_s: float) -> float | None:
    """Seconds until the server closed `conn` (recv gives b""), or None if it is still open after `limit_s`."""
    started = time.monotonic()
    conn.settimeout(limit_s)
    try:
        while conn.recv(4096):
            pass
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def test_a_request_whose_headers_never_finish_is_closed(served: int) -> None:
    with socket.create_connection(("127.0.0.1", served)) as whole:  # the positive control: a whole request
        whole.sendall(b"GET /probes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        whole.settimeout(10)
        assert whole.recv(4096).startswith(b"HTTP/1.1 200")
    with (
        socket.create_connection(("127.0.0.1", served)) as slow,
        socket.create_connection(("127.0.0.1", served)) as mute,
    ):
        slow.sendall(b"GET /probes HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        for conn in (slow, mute):  # `mute` sends nothing at all
            took = _closed_after(conn, 8)
            assert took is not None and took < 6, took
