"""The progress watchdog: a run whose probe beats per case and then makes no progress is stopped long before its
time limit and started once more; a second stall ends `timeout`, never clean.

The sanitizer is the replay stand-in running its target (the real selftest probe) as the real one would, then
writing a real H200 capture's XML (initcheck, no record) when the target ends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.probes.selftest import STALLED_MARK
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.probing.runner import run_probe
from tests.conftest import VERSIONS, capture, replaying

STALL_S = 2.0


@pytest.fixture
def sanitizer_running_target(monkeypatch: pytest.MonkeyPatch) -> None:
    replaying(monkeypatch, capture(VERSIONS[1], "initcheck_ok"), target=True)


def _request(behaviour: str) -> ProbeRequest:
    return ProbeRequest(probe="selftest", tool=Tool.INITCHECK, params={"behaviour": behaviour}, timeout_s=120)


def test_a_run_that_stalls_once_is_stopped_and_its_second_attempt_counts(
    tmp_path: Path, sanitizer_running_target: None, replay_settings: Settings
) -> None:
    settings = replay_settings.model_copy(update={"stall_s": STALL_S})
    result = run_probe(_request("stall-once"), workdir=tmp_path, settings=settings)
    assert (tmp_path / STALLED_MARK).exists()  # the first attempt did hang
    assert result.outcome is Outcome.CLEAN, result.message
    assert len(result.stalls) == 1 and f"no progress for {STALL_S:.0f} s" in result.stalls[0]
    assert "case stall-once" in result.stalls[0]  # what had started when it stalled
    assert "started again in a fresh process" in result.message
    assert result.timing["stalled"] >= STALL_S and result.duration_s < 60  # far below the 120 s limit


def test_a_run_that_stalls_twice_ends_timeout_with_the_reason(
    tmp_path: Path, sanitizer_running_target: None, replay_settings: Settings
) -> None:
    settings = replay_settings.model_copy(update={"stall_s": STALL_S})
    result = run_probe(_request("hang"), workdir=tmp_path, settings=settings)
    assert result.outcome is Outcome.TIMEOUT and result.outcome.exit_code == 3
    assert result.message.startswith(f"stalled: no progress for {STALL_S:.0f} s")
    assert "the last thing started: 1 case hang" in result.message
    assert len(result.stalls) == 1  # one retry, not more
    assert result.timing["stalled"] + result.duration_s < 60


def test_the_watchdog_off_leaves_only_the_time_limit(
    tmp_path: Path, sanitizer_running_target: None, replay_settings: Settings
) -> None:
    settings = replay_settings.model_copy(update={"stall_s": 0})
    request = _request("hang").model_copy(update={"timeout_s": 4})
    result = run_probe(request, workdir=tmp_path, settings=settings)
    assert result.outcome is Outcome.TIMEOUT and result.stalls == []
    assert result.message.startswith("wall-clock limit of 4 s hit")


def test_a_probe_that_does_not_beat_is_never_judged_stalled(
    tmp_path: Path, sanitizer_running_target: None, replay_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same quiet probe, had it not opted in (a user's command, one long case): only its time limit applies.
    from cuprobe.probes.selftest import Selftest

    monkeypatch.setattr(Selftest, "beats", False)
    settings = replay_settings.model_copy(update={"stall_s": 1.0})
    request = ProbeRequest(
        probe="selftest", tool=Tool.INITCHECK, params={"behaviour": "sleep", "seconds": 4}, timeout_s=60
    )
    result = run_probe(request, workdir=tmp_path, settings=settings)
    assert result.outcome is Outcome.CLEAN and result.stalls == [], result.message
