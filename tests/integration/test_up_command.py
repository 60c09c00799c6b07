"""A local `cuprobe up --command`: the command probe on, behind a token made for its user alone, which the CLI reads;
without --command a command job is refused saying what to do instead."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import httpx

from tests.integration.stack import REPO
from tests.integration.test_embedded import CLI, _up


def _served(up: subprocess.Popen[bytes], log: Path, api: httpx.Client, token: Path | None = None) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            said = token.read_text().strip() if token is not None and token.exists() else ""
            if api.get("/health", headers={"Authorization": f"Bearer {said}"} if said else {}).json().get("workers"):
                return
        except (httpx.TransportError, ValueError):
            pass
        assert up.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.3)


def _cli(tmp_path: Path, api: httpx.Client, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ, "PYTHONPATH": str(REPO), "CUPROBE_DATA_DIR": str(tmp_path / "data"),
        "CUPROBE_API_URL": str(api.base_url).rstrip("/"),
    }
    env.pop("CUPROBE_API_TOKEN", None)
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_up_with_command_makes_a_token_for_its_user_alone_that_the_cli_uses(tmp_path: Path) -> None:
    up, log, api = _up(tmp_path, "--command", api_token="")
    try:
        token = tmp_path / "data" / "api-token"
        _served(up, log, api, token)
        assert stat.S_IMODE(token.stat().st_mode) == 0o600 and len(token.read_text().strip()) >= 40
        assert f"command probe on: jobs need the token in {token}" in log.read_text()
        command = {"probe": "command", "tool": "none", "params": {"argv": ["true"]}}
        assert api.post("/jobs", json=command).status_code == 401  # no token: nothing runs
        submitted = _cli(tmp_path, api, "submit", "command", "--tool", "none", "-p", 'argv=["true"]')
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr  # the CLI read the token: admitted
        assert "command probe is off" not in submitted.stdout + submitted.stderr
        # The user's own CPU-only tests, gated through this service: bare, on its CPU worker (no GPU here).
        (tmp_path / "test_cpu.py").write_text("def test_sum():\n    assert sum([1, 2]) == 3\n")
        (tmp_path / "suite.toml").write_text(
            'name = "own"\n[[test]]\nname = "cpu"\nkind = "pytest"\ntool = "none"\ngpu = false\n'
            f'paths = ["{tmp_path / "test_cpu.py"}"]\ncwd = "{tmp_path}"\n'
        )
        gated = _cli(tmp_path, api, "gate", "suite.toml")
        assert gated.returncode == 0, gated.stdout + gated.stderr
        assert "exit 0 (pass)" in gated.stdout
    finally:
        os.killpg(up.pid, signal.SIGTERM)
        up.wait(30)


def test_up_without_command_refuses_it_naming_local_and_what_enabling_takes(tmp_path: Path) -> None:
    up, log, api = _up(tmp_path)
    try:
        _served(up, log, api)
        refused = api.post("/jobs", json={"probe": "command", "tool": "none", "params": {"argv": ["true"]}})
        assert refused.status_code == 403
        said = refused.text
        assert "`cuprobe gate --local` runs your tests on this machine without a server" in said
        assert "started with --command" in said and "CUPROBE_COMMAND_ALLOWLIST" in said
        assert not (tmp_path / "data" / "api-token").exists()  # no token made where none is needed
    finally:
        os.killpg(up.pid, signal.SIGTERM)
        up.wait(30)
