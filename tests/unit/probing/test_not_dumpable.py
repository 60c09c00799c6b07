"""A process that marked itself non-dumpable (the API, the workers, beat) keeps its environment from another process
of the same user: a job's command reading /proc/PID/environ finds the token there otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SECRET = "t0ken-that-must-stay-inside"
# As root, another process can read any /proc entry: both sides run as one unprivileged user instead.
AS_USER = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []


def _holder(mark: bool) -> subprocess.Popen[bytes]:
    code = (
        "import sys, time\n"
        "from cuprobe.service.probing.secrets import not_dumpable\n"
        f"ok = not_dumpable() if {mark} else True\n"
        "print('ready' if ok else 'failed', flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "CUPROBE_API_TOKEN": SECRET}
    return subprocess.Popen([*AS_USER, sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, cwd="/")


def _read_environ(pid: int) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*AS_USER, "cat", f"/proc/{pid}/environ"], capture_output=True, timeout=30)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux's")
def test_a_non_dumpable_process_environment_is_unreadable_to_its_own_user() -> None:
    for mark in (False, True):
        holder = _holder(mark)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == b"ready"
            time.sleep(0.1)
            seen = _read_environ(holder.pid)
        finally:
            holder.kill()
            holder.wait()
        if mark:
            assert seen.returncode != 0 and SECRET.encode() not in seen.stdout
            assert b"Permission denied" in seen.stderr
        else:  # the positive control: unmarked, the same user reads the token
            assert seen.returncode == 0 and SECRET.encode() in seen.stdout, seen.stderr
