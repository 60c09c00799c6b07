"""A `command` job through the runner, as a worker runs it: every process it started dies with it, and the
worker's secrets never reach the command, its parent's /proc environ, or the stored result."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest, RunResult
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.probing.secrets import REDACTED

SH = str(Path(shutil.which("sh") or "/bin/sh").resolve())
SECRETS = {
    "CUPROBE_API_TOKEN": "tok-4f9a1c77e2",
    "CUPROBE_DATABASE_URL": "postgresql://cuprobe:pg-pass-8812@db:5432/cuprobe",
    "CUPROBE_BROKER_URL": "redis://:redis-pass-5531@cache:6379/0",
    "CUDA_API_KEY": "cuda-key-19a8b",
    "LD_AUTH_TOKEN": "ld-auth-77c1",
    "NVIDIA_TOKEN": "nv-token-3390",
    "GITHUB_TOKEN": "ghp_deadbeef01",
}


@pytest.fixture
def command_worker(monkeypatch: pytest.MonkeyPatch) -> Settings:
    """A worker with the command probe on (sh allowlisted by its exact path) and secrets in its environment."""
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580", "13.0", "GPU-0"))
    monkeypatch.setenv("CUPROBE_COMMAND_ENABLED", "1")
    monkeypatch.setenv("CUPROBE_COMMAND_ALLOWLIST", SH)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    return Settings(timeout_s=60)


def _command(script: str, **params: object) -> ProbeRequest:
    return ProbeRequest(probe="command", tool=Tool.NONE, params={"argv": ["sh", "-c", script], **params})


def sleeping(seconds: int) -> list[int]:
    """Live processes whose argv is exactly `sleep SECONDS` (not the probe, whose argv holds the script)."""
    wanted = f"sleep\0{seconds}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and (entry / "cmdline").read_bytes() == wanted
                and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            ):
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def _gone(*seconds: int, within_s: float = 5) -> list[int]:
    deadline = time.monotonic() + within_s
    while (left := [p for n in seconds for p in sleeping(n)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


SLEEPS = "sleep 1234 & sleep 1235"
ESCAPES = "setsid sleep 1236 & (setsid sleep 1237 &); sleep 1235"


@pytest.mark.parametrize("script", [SLEEPS, ESCAPES])
def test_command_timeout_kills_every_process_it_started(
    script: str, command_worker: Settings, tmp_path: Path
) -> None:
    result = runner.run_probe(_command(script, timeout_s=3), workdir=tmp_path, settings=command_worker)
    assert _gone(1234, 1235, 1236, 1237) == []
    assert result.outcome is Outcome.TIMEOUT, result.message  # the command's own limit: it timed out
    assert "wall-clock limit of 3 s; it and every process it started were killed" in result.message


@pytest.mark.parametrize("script", [SLEEPS, ESCAPES])
def test_cancel_kills_every_process_the_command_started(
    script: str, command_worker: Settings, tmp_path: Path
) -> None:
    cancel = threading.Event()
    box: dict[str, RunResult] = {}
    thread = threading.Thread(
        target=lambda: box.setdefault(
            "r", runner.run_probe(_command(script), workdir=tmp_path, settings=command_worker, cancel_event=cancel)
        )
    )
    thread.start()
    deadline = time.monotonic() + 20
    started = (1234, 1235) if script == SLEEPS else (1235, 1236, 1237)
    while not all(sleeping(n) for n in started):
        assert time.monotonic() < deadline, "the command's processes never all started"
        time.sleep(0.05)
    cancel.set()
    thread.join(30)
    assert _gone(1234, 1235, 1236, 1237) == []
    assert box["r"].outcome is Outcome.CANCELLED
    assert "cuprobe stopped the run because the job was cancelled" in box["r"].message
    assert "the probe and every process it started were killed" in box["r"].message


def test_command_and_its_parent_never_hold_the_workers_secrets(command_worker: Settings, tmp_path: Path) -> None:
    script = 'echo "== parent"; tr "\\0" "\\n" < /proc/$PPID/environ; echo "== own"; env; echo "== end"'
    result = runner.run_probe(_command(script), workdir=tmp_path, settings=command_worker)
    assert result.outcome is Outcome.CLEAN, result.message
    shown = result.cases[0].observations["stdout_tail"]
    assert "== parent" in shown and "== end" in shown and "PATH=" in shown  # the dump really ran
    for value in SECRETS.values():
        assert value not in shown
    # Not hidden by the scrub: the probe process and the command never had them.
    assert REDACTED not in shown and REDACTED not in (tmp_path / "stdout.txt").read_text()
    for name in ("CUPROBE_API_TOKEN", "CUDA_API_KEY", "LD_AUTH_TOKEN", "NVIDIA_TOKEN", "CUPROBE_COMMAND_ALLOWLIST"):
        assert f"{name}=" not in shown.split("== own")[1]


def test_a_secret_the_command_finds_elsewhere_is_scrubbed_from_the_stored_result(
    command_worker: Settings, tmp_path: Path
) -> None:
    leak = tmp_path / "run" / "leak.txt"  # in the job's own directory: the sandbox hides the rest of /tmp
    leak.parent.mkdir()
    leak.write_text(f"token={SECRETS['CUPROBE_API_TOKEN']} password=pg-pass-8812\n")
    result = runner.run_probe(_command(f"cat {leak}"), workdir=tmp_path / "run", settings=command_worker)
    stored = result.model_dump_json()
    assert SECRETS["CUPROBE_API_TOKEN"] not in stored and "pg-pass-8812" not in stored
    assert f"token={REDACTED} password={REDACTED}" in result.cases[0].observations["stdout_tail"]
    for artifact in ("result.json", "stdout.txt", "stderr.txt"):
        assert "pg-pass-8812" not in (tmp_path / "run" / artifact).read_text()
