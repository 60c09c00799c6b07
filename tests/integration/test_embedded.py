"""`cuprobe up` with no GPU: SQLite, an embedded Valkey child, a worker and the API; nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.integration.stack import REPO, free_port, wait_for

CLI = [sys.executable, "-m", "tests.cli_app"]


def test_up_runs_cpu_probes_and_says_gpu_probes_are_unavailable(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "CUPROBE_DATA_DIR": str(tmp_path / "data"),
        "CUPROBE_RECONCILE_INTERVAL_S": "1",
        "CUPROBE_API_URL": f"http://127.0.0.1:{port}",
        "PATH": "/usr/bin:/bin",
    }
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        up = subprocess.Popen(
            [*CLI, "up", "--port", str(port), "--cpu-concurrency", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            start_new_session=True,
        )
    try:
        api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        deadline = time.monotonic() + 60
        while True:
            try:
                if api.get("/health").json()["workers"]:
                    break
            except httpx.TransportError:
                pass
            assert up.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        assert "no GPU here" in log.read_text() and "uninit-read" in log.read_text()
        submit = subprocess.run(
            [*CLI, "submit", "selftest", "--wait"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert submit.returncode == 0, submit.stdout + submit.stderr
        assert "clean" in submit.stdout
        gpu = api.post("/jobs", json={"probe": "uninit-read", "deadline_s": 1}).json()
        assert wait_for(api, gpu["id"], timeout=30)["outcome"] == "unavailable"
        assert (tmp_path / "data" / "cuprobe.db").exists()
    finally:
        os.killpg(up.pid, signal.SIGTERM)  # its own session: up, its worker and its Valkey child
        up.wait(30)
