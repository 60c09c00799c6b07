"""STAND-IN for main's runner (bare runs only), so the service branch can run its tests; replaced on merge."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from probes.contract import EXIT_UNAVAILABLE, ProbeResult
from service.config import Settings
from service.models import Evidence, Finding, Outcome, ProbeRequest, RunResult, Tool


def _die_with_parent() -> None:
    # A probe orphaned by a killed worker must not run on: PR_SET_PDEATHSIG(SIGKILL) (Linux).
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_probe(
    request: ProbeRequest,
    *,
    workdir: Path,
    settings: Settings | None = None,
    cancel_event: threading.Event | None = None,
) -> RunResult:
    """Run `python -m probes NAME` bare in its own process group and classify how it ended."""
    settings = settings or Settings()
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "result.json"
    tool = request.tool or Tool.NONE
    command = [
        settings.python or sys.executable,
        "-m",
        "probes",
        request.probe,
        "--params",
        json.dumps(request.params),
        "--out",
        str(out),
        "--tool",
        tool.value,
    ]
    timeout = request.timeout_s or settings.timeout_s
    start = time.monotonic()
    with open(workdir / "stdout.txt", "wb") as stdout, open(workdir / "stderr.txt", "wb") as stderr:
        proc = subprocess.Popen(
            command, stdout=stdout, stderr=stderr, start_new_session=True, preexec_fn=_die_with_parent
        )
        timed_out = cancelled = False
        while proc.poll() is None:
            if time.monotonic() - start > timeout:
                timed_out = True
            if cancel_event is not None and cancel_event.is_set():
                cancelled = True
            if timed_out or cancelled:
                _kill_group(proc)
                proc.wait()
                break
            time.sleep(0.05)
    code = proc.returncode
    result = RunResult(
        probe=request.probe,
        tool=tool,
        params=request.params,
        outcome=Outcome.CLEAN,
        message="",
        command=command,
        exit_code=code,
        duration_s=time.monotonic() - start,
    )
    probe_result = ProbeResult.model_validate_json(out.read_text()) if out.exists() else None
    if timed_out:
        result.outcome, result.message = (
            Outcome.TIMEOUT,
            f"wall-clock limit of {timeout} s hit; process group killed",
        )
    elif cancelled:
        result.outcome, result.message = Outcome.PROBE_ERROR, "cancelled; process group killed"
    elif code < 0:
        result.signal = -code
        result.outcome = Outcome.CRASHED
        result.message = f"probe killed by signal {signal.Signals(-code).name}"
    elif code == EXIT_UNAVAILABLE:
        result.outcome = Outcome.UNAVAILABLE
        result.message = (probe_result.unavailable if probe_result else None) or "probe unavailable here"
    elif code != 0:
        result.outcome, result.message = Outcome.PROBE_ERROR, f"probe exited {code}"
    elif probe_result is None or not probe_result.complete:
        result.outcome, result.message = Outcome.PROBE_ERROR, "probe exited 0 without its completion sentinel"
    elif any(case.violations for case in probe_result.cases):
        result.outcome = Outcome.FINDINGS
        result.message = "; ".join(v for case in probe_result.cases for v in case.violations)
        result.findings = [
            Finding(
                signature=f"{request.probe}:{case.id}:expectation",
                tool=tool,
                kind="expectation-violated",
                message=violation,
                case=case.id,
                count=1,
                evidence=Evidence.CORRELATED,
            )
            for case in probe_result.cases
            for violation in case.violations
        ]
    else:
        result.message = "completed"
    return result
