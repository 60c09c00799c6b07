"""A service job that runs code of its own runs inside bubblewrap: it sees no other process, reaches no network but
its own loopback, cannot read cuprobe's data directory, and writes only in its job directory. A local run (trusted)
runs as the user's own. Where no sandbox can be made, the worker refuses such a job unless its operator opted out.

These tests need bubblewrap and user namespaces; without them they skip, unless CUPROBE_REQUIRE_SANDBOX=1 (CI, where
.ci/run installs bubblewrap) makes their absence a failure."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest, RunResult
from cuprobe.service.probing import runner, sandbox

PYTHON = str(Path(sys.executable).resolve())
SECRET = "store-pass-5d1e9"


@pytest.fixture(autouse=True)
def bubblewrap_works() -> None:
    sandbox.sandbox_refusal.cache_clear()
    if (why := sandbox.sandbox_refusal()) is not None:
        if os.environ.get("CUPROBE_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"the sandbox tests must run here (CUPROBE_REQUIRE_SANDBOX=1): {why}")
        pytest.skip(why)


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    """A worker with the command probe on (this Python allowlisted by its exact path) and a store file of its own."""
    monkeypatch.setenv("CUPROBE_COMMAND_ENABLED", "1")
    monkeypatch.setenv("CUPROBE_COMMAND_ALLOWLIST", PYTHON)
    data = tmp_path / "data"
    data.mkdir()
    (data / "cuprobe.db").write_text(f"the store: {SECRET}")
    return Settings(timeout_s=120, data_dir=data)


def _run(code: str, settings: Settings, workdir: Path, *, trusted: bool = False) -> tuple[RunResult, dict[str, str]]:
    """`code` run by this Python as a command job; its result and what it printed as JSON."""
    request = ProbeRequest(probe="command", tool=Tool.NONE, params={"argv": [sys.executable, "-c", code]})
    result = runner.run_probe(request, workdir=workdir, settings=settings, trusted=trusted)
    out = result.cases[0].observations.get("stdout_tail", "") if result.cases else ""
    return result, json.loads(out.strip().splitlines()[-1]) if out.strip() else {}


LOOK = """
import json, os, socket, sys
seen = {}
def attempt(name, fn):
    try:
        seen[name] = str(fn())[:200]
    except Exception as exc:
        seen[name] = 'refused: ' + type(exc).__name__
attempt('pids', lambda: len([p for p in os.listdir('/proc') if p.isdigit()]))
attempt('outside', lambda: open('/proc/%s/environ' % sys.argv[1]).read())
attempt('store', lambda: open(sys.argv[2]).read())
attempt('connect', lambda: socket.create_connection(('127.0.0.1', int(sys.argv[3])), timeout=3).close())
probe_file = os.path.join(os.getcwd(), 'cuprobe-sandbox-probe')
attempt('write_cwd', lambda: (open(probe_file, 'w').close(), os.remove(probe_file)))
attempt('write_home', lambda: open(os.path.join(os.environ['HOME'], 'kept'), 'w').write('1'))
attempt('write_tmp', lambda: open(os.path.join(os.environ['TMPDIR'], 'kept'), 'w').write('1'))
seen['home'] = os.environ['HOME']
print(json.dumps(seen))
"""


def _look(settings: Settings, workdir: Path, *, trusted: bool = False) -> tuple[RunResult, dict[str, str]]:
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env={"TOKEN": SECRET})
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        port = listener.getsockname()[1]
        code = f"import sys; sys.argv[1:] = {[str(holder.pid), str(settings.data_dir / 'cuprobe.db'), str(port)]!r}\n"
        return _run(code + LOOK, settings, workdir, trusted=trusted)
    finally:
        listener.close()
        holder.kill()
        holder.wait()


def test_a_command_job_cannot_reach_cuprobe(worker: Settings, tmp_path: Path) -> None:
    workdir = tmp_path / "jobs" / "j1" / "attempt-1"
    result, seen = _look(worker, workdir)
    assert result.outcome is Outcome.CLEAN, result.message
    assert int(seen["pids"]) < 10  # its own PID namespace: the sanitizer-less probe, the command, itself
    assert seen["outside"].startswith("refused") and seen["store"].startswith("refused"), seen
    assert seen["connect"].startswith("refused") and seen["write_cwd"].startswith("refused"), seen
    assert seen["write_home"] == seen["write_tmp"] == "1", seen  # HOME and TMPDIR are in the job's directory
    assert Path(seen["home"]).is_relative_to(workdir) and (workdir / "home" / "kept").exists()
    assert SECRET not in result.model_dump_json()


def test_the_users_own_run_is_not_sandboxed(worker: Settings, tmp_path: Path) -> None:
    """The positive control: run locally (cuprobe exec, gate --local) the same command sees what the user sees."""
    result, seen = _look(worker, tmp_path / "local", trusted=True)
    assert result.outcome is Outcome.CLEAN, result.message
    assert SECRET in seen["store"] and seen["connect"] == "None", seen
    assert int(seen["pids"]) > 10


def test_a_worker_that_cannot_sandbox_refuses_command_jobs_unless_told_it_is_unsafe(
    worker: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    sandbox.sandbox_refusal.cache_clear()
    result, _ = _run("print('{}')", worker, tmp_path / "refused")
    assert result.outcome is Outcome.UNAVAILABLE
    assert "bubblewrap (bwrap) is not installed" in result.message and "CUPROBE_UNSAFE_NO_SANDBOX" in result.message
    unsafe = worker.model_copy(update={"unsafe_no_sandbox": True})
    result, seen = _run("import json; print(json.dumps({'ran': 'yes'}))", unsafe, tmp_path / "unsafe")
    assert result.outcome is Outcome.CLEAN and seen == {"ran": "yes"}, result.message
    sandbox.sandbox_refusal.cache_clear()


def test_a_program_under_a_hidden_folder_runs_and_its_neighbours_stay_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: Settings
) -> None:
    """A test binary built under /tmp (a CI checkout there) is bound back into the sandbox, read-only, and so is the
    job's working directory; the rest of /tmp is not."""
    project = tmp_path / "checkout"
    project.mkdir()
    program = project / "run-test"
    program.write_text("#!/bin/sh\necho ran in \"$PWD\"\ncat ../neighbour.txt 2>&1\n")
    program.chmod(0o755)
    (tmp_path / "neighbour.txt").write_text(f"another job's file: {SECRET}")
    monkeypatch.setenv("CUPROBE_COMMAND_ALLOWLIST", str(program))
    params = {"argv": [str(program)], "cwd": str(project), "expect_exit": None}
    request = ProbeRequest(probe="command", tool=Tool.NONE, params=params)
    result = runner.run_probe(request, workdir=tmp_path / "job", settings=worker)
    out = result.cases[0].observations["stdout_tail"]
    assert result.outcome is Outcome.CLEAN and f"ran in {project}" in out, (result.message, out)
    assert SECRET not in out and "No such file" in out
