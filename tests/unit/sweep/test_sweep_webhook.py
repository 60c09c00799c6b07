"""`cuprobe sweep run` tells a real (local) webhook what changed, once; a webhook that fails loses nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from cuprobe.service.db.store import Store
from cuprobe.service.db.sweeps import SweepStore

# Real CPU runs of the selftest probe: `violate` breaks its own expectation (a finding), `ok` is clean.
DEFINITION = """
name = "webhook-test"
[[entry]]
probe = "selftest"
tool = "none"
grid = { behaviour = ["ok", "violate"] }
"""


class Hook:
    """An HTTP server on a free loopback port recording each POSTed JSON body; answers `status`."""

    def __init__(self, status: int = 200) -> None:
        self.bodies: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the name http.server calls
                hook.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hook() -> Iterator[Hook]:
    server = Hook()
    yield server
    server.server.shutdown()


def _sweep(tmp_path: Path, url: str) -> Any:
    definition = tmp_path / "webhook.toml"
    definition.write_text(DEFINITION)
    env = {"CUPROBE_DATA_DIR": str(tmp_path / "data"), "CUPROBE_SWEEP_WEBHOOK_URL": url, "COLUMNS": "200"}
    return CliRunner().invoke(app, ["sweep", "run", str(definition)], env=env)


def test_a_new_finding_is_posted_once_and_an_unchanged_sweep_is_not(tmp_path: Path, hook: Hook) -> None:
    first = _sweep(tmp_path, hook.url)
    assert first.exit_code == 1, first.output  # a new finding
    (body,) = hook.bodies
    assert body["counts"]["new"] == 1 and body["title"].startswith("cuprobe sweep webhook-test: 1 new")
    assert "none|expectation-violation|selftest|violate" in body["text"]
    assert body["diff"]["new"][0]["signature"] == "none|expectation-violation|selftest|violate"
    assert "notified (HTTP 200)" in first.output
    second = _sweep(tmp_path, hook.url)
    assert second.exit_code == 0, second.output  # the same finding persists: nothing new
    assert len(hook.bodies) == 1


def test_a_failing_webhook_neither_loses_the_sweep_nor_fails_the_run(tmp_path: Path) -> None:
    broken = Hook(status=500)
    try:
        result = _sweep(tmp_path, broken.url)
    finally:
        broken.server.shutdown()
    assert result.exit_code == 1, result.output
    assert len(broken.bodies) == 1 and "answered HTTP 500" in result.output
    sweeps = SweepStore(Store(f"sqlite:///{tmp_path / 'data' / 'cuprobe.db'}")).list()
    assert [(s.definition, s.state) for s in sweeps] == [("webhook-test", "done")]


def test_show_lists_stored_sweeps_and_says_when_there_are_none(tmp_path: Path) -> None:
    env = {"CUPROBE_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "200"}
    empty = CliRunner().invoke(app, ["sweep", "show"], env=env)
    assert empty.exit_code == 0 and "no sweeps stored" in empty.output
    assert _sweep(tmp_path, "").exit_code == 1  # no webhook configured: nothing posted, the sweep stored
    listed = CliRunner().invoke(app, ["sweep", "show"], env=env)
    assert "webhook-test" in listed.output and "done" in listed.output
    sweep_id = next(line.split()[0] for line in listed.output.splitlines() if "webhook-test" in line)  # under a header
    shown = CliRunner().invoke(app, ["sweep", "show", sweep_id], env=env)
    assert shown.exit_code == 0 and "none|expectation-violation|selftest|violate" in shown.output
