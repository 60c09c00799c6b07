"""The gate stops at the first connection error with one message; a poll that misses once is retried, not
reported as a lost service."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from cuprobe.service.client import Client

cli = CliRunner()


@pytest.fixture
def slammer() -> Iterator[tuple[str, list[int]]]:
    """A port that accepts each connection and closes it at once; the list counts the connections."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    seen: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            seen.append(1)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", seen
    server.close()


def test_gate_without_a_service_stops_at_the_first_connection_error(
    slammer: tuple[str, list[int]], tmp_path: Path
) -> None:
    url, seen = slammer
    entries = "".join(f'[[probe]]\nname = "s{i}"\nprobe = "selftest"\ntool = "none"\n' for i in range(6))
    (tmp_path / "suite.toml").write_text(f'name = "remote"\n{entries}')
    result = cli.invoke(app, ["gate", str(tmp_path / "suite.toml"), "--url", url], env={"COLUMNS": "200"})
    assert result.exit_code == 3
    assert len(seen) == 1, f"{len(seen)} connections: the gate kept submitting"
    said = result.stdout + result.stderr
    # Once as the first run ends (the others name it), once in the summary.
    assert result.stdout.count("cannot reach the cuprobe API") == 1, said
    assert result.stderr.count("cannot reach the cuprobe API") == 1, said
    assert "could not run (6 run(s): s0, s1, s2, s3, s4, s5)" in result.stdout


class _Quiet(BaseHTTPRequestHandler):
    """A test server's handler: answers JSON, logs nothing."""

    def reply(self, status: int, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # the base class's name
        """Quiet."""


class _Flaky(_Quiet):
    """Drops the first two connections without an answer, then serves a finished job."""

    dropped = 0

    def do_GET(self) -> None:  # the name http.server calls
        if _Flaky.dropped < 2:
            _Flaky.dropped += 1
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.reply(200, {"id": "j1", "state": "done"})


def test_a_poll_that_misses_twice_is_retried_with_backoff() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        job = Client(f"http://127.0.0.1:{server.server_address[1]}", backoff_s=0.05).job("j1")
    finally:
        server.shutdown()
    assert job["state"] == "done" and _Flaky.dropped == 2


class _Refusing(_Quiet):
    """Another server on the port the client asks: refuses every request for want of a token, as a cuprobe API
    started with CUPROBE_API_TOKEN does."""

    def do_POST(self) -> None:  # the name http.server calls
        self.reply(401, {"error": "missing bearer token"})


def test_a_refusal_names_the_url_it_answered() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        result = cli.invoke(app, ["submit", "selftest", "--url", url], env={"COLUMNS": "200"})
    finally:
        server.shutdown()
    assert result.exit_code == 2
    assert f"POST {url}/jobs answered 401: missing bearer token" in " ".join(result.stderr.split())
