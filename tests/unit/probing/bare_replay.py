"""The confirmation's bare re-runs played back: uninit-read under initcheck from the H200
(tests/data/runs/confirm-verdicts-uninit_read-2026.4.0.0) through the replay stand-in, its re-runs through
tests/replay/python-bare, which copies that run's four recorded re-runs and logs when each started and with which
arguments."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Confirmation, Finding, ProbeRequest
from tests.conftest import REPLAY_PYTHON, RUNS, replaying

RUN = RUNS / "confirm-verdicts-uninit_read-2026.4.0.0"
REQUEST = ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK, params={"n": 1024, "k": 1000, "block": 256})


def bare_log(log: Path) -> list[dict[str, object]]:
    """Every bare re-run the stand-in started: its start time, arguments, niceness... and process id."""
    return [json.loads(p.read_text()) | {"pid": int(p.stem.rsplit("-", 1)[1])} for p in sorted(log.glob("bare-*"))]


def consequential(findings: list[Finding]) -> list[Confirmation | None]:
    """The confirmations of uninit-read's own finding (double_all's reads)."""
    return [f.confirmation for f in findings if f.kernel == "double_all"]


def replay_bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, replay_settings: Settings) -> tuple[Path, Settings]:
    """The recorded run and its re-runs set up for playback; returns the stand-in's log folder and the settings."""
    log = tmp_path / "log"
    log.mkdir()
    # The recorded run kept its XML, result and re-runs but not the sanitizer's console: its last line is rebuilt
    # from the summary count cuprobe recorded for that run (408), and the
    # version banner is that of the same sanitizer's other captured run.
    case = tmp_path / "case"
    shutil.copytree(RUN, case)
    (case / "stdout.txt").write_text("========= ERROR SUMMARY: 408 errors\n")
    shutil.copy(RUNS / "uninit-read-initcheck-2026.4.0.0" / "version.txt", case / "version.txt")
    replaying(monkeypatch, case, target=False)
    monkeypatch.setenv("CUPROBE_REPLAY_BARE", str(RUN))
    monkeypatch.setenv("CUPROBE_REPLAY_BARE_LOG", str(log))
    # One process per re-run, so that the stand-in's log has one entry per re-run, as these tests count them;
    # tests/unit/probing/test_confirm_processes.py plays the re-runs back in fewer processes (the default, 2).
    return log, replay_settings.model_copy(update={"python": str(REPLAY_PYTHON), "confirm_processes": 4})
