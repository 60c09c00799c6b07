"""When cuprobe itself stops a run (the XML byte cap, a cancel): never clean, never crashed, records kept.

The sanitizer is the replay stand-in writing a real H200 capture's XML while its target (the real selftest
probe, sleeping) still runs, as the real sanitizer writes records while its program runs.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.sanitizer.classify import RunEvidence, classify
from cuprobe.service.sanitizer.parse import parse_xml
from cuprobe.service.sanitizer.summary import read_summary
from tests.conftest import BOX_ROOT, VERSIONS, capture, replaying, xml_of

SLEEPING = ProbeRequest(probe="selftest", tool=Tool.INITCHECK, params={"behaviour": "sleep", "seconds": 30})


@pytest.fixture
def sanitizer_writing_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in writes the captured 300-record initcheck XML first, then runs the sleeping probe."""
    replaying(monkeypatch, capture(VERSIONS[1], "initcheck_many"), target=True)
    monkeypatch.setenv("CUPROBE_REPLAY_XML_FIRST", "1")


def test_byte_cap_with_records_seen_is_findings_truncated_not_crashed(
    tmp_path: Path, sanitizer_writing_first: None, replay_settings: Settings
) -> None:
    settings = replay_settings.model_copy(update={"max_xml_bytes": 40_000})
    result = run_probe(SLEEPING, workdir=tmp_path, settings=settings)
    assert result.outcome is Outcome.FINDINGS and result.truncated
    assert 0 < result.records < 300 and result.duration_s < 20  # stopped, not slept through
    assert "cuprobe stopped the run because its XML outgrew the byte cap" in result.message
    assert "not a crash" in result.message and result.signal is None


def test_byte_cap_before_any_record_is_sanitizer_error(
    tmp_path: Path, sanitizer_writing_first: None, replay_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(VERSIONS[1], "initcheck_ok")))  # an XML with no record
    settings = replay_settings.model_copy(update={"max_xml_bytes": 10})
    result = run_probe(SLEEPING, workdir=tmp_path, settings=settings)
    assert result.outcome is Outcome.SANITIZER_ERROR and result.records == 0
    assert "byte cap" in result.message and "no sanitizer record was read before the stop" in result.message


def test_cancel_with_records_seen_is_findings_truncated(
    tmp_path: Path, sanitizer_writing_first: None, replay_settings: Settings
) -> None:
    cancel = threading.Event()
    threading.Timer(3.0, cancel.set).start()
    result = run_probe(SLEEPING, workdir=tmp_path, settings=replay_settings, cancel_event=cancel)
    assert result.outcome is Outcome.FINDINGS and result.truncated and result.records == 300
    assert "cuprobe stopped the run because the job was cancelled" in result.message


def test_cancel_before_any_record_is_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings
) -> None:
    replaying(monkeypatch, capture(VERSIONS[1], "initcheck_ok"), target=True)
    cancel = threading.Event()
    threading.Timer(3.0, cancel.set).start()
    result = run_probe(SLEEPING, workdir=tmp_path, settings=replay_settings, cancel_event=cancel)
    assert result.outcome is Outcome.CANCELLED and result.outcome.exit_code == 3
    assert "the job was cancelled" in result.message and "not clean" in result.message


@pytest.mark.parametrize("version", VERSIONS)
def test_a_signal_that_is_not_cuprobes_stays_crashed(version: str) -> None:
    # memcheck_kill: the program was SIGKILLed by someone else; with the same evidence flagged as our byte-cap stop,
    # it is findings or sanitizer_error, never crashed.
    case = capture(version, "memcheck_kill")
    summary = read_summary((case / "stdout.txt").read_text())
    parsed = parse_xml(xml_of(case), roots=[BOX_ROOT])
    code = int((case / "exit_code").read_text())
    theirs = classify(RunEvidence(tool=Tool.MEMCHECK, returncode=code, summary=summary, parsed=parsed))
    assert theirs.outcome is Outcome.CRASHED
    ours = classify(RunEvidence(tool=Tool.MEMCHECK, returncode=code, summary=summary, parsed=parsed, xml_capped=True))
    assert ours.outcome in (Outcome.FINDINGS, Outcome.SANITIZER_ERROR) and "cuprobe stopped" in ours.message
