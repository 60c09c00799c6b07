"""The whole runner, classified as docs/outcomes.md says, against the replay stand-in built from H200 captures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.sanitizer.locate import _version
from tests.conftest import CAPTURES, RUNS, VERSIONS, capture
from tests.processes import processes_mentioning


@pytest.fixture
def gpu_present(monkeypatch: pytest.MonkeyPatch) -> None:
    """This CPU machine has no GPU; the replayed runs came from one (the only mock in this file)."""
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))


def replay(monkeypatch: pytest.MonkeyPatch, case: Path, run_target: bool = False) -> None:
    _version.cache_clear()  # one stand-in binary answers with each capture's version
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(case))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "1" if run_target else "0")


def test_no_gpu_here_is_unavailable(tmp_path: Path, replay_settings: Settings) -> None:
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK), workdir=tmp_path, settings=replay_settings
    )
    assert result.outcome is Outcome.UNAVAILABLE and result.outcome.exit_code == 3
    assert "no CUDA device" in result.message


def test_missing_sanitizer_is_unavailable(tmp_path: Path, gpu_present: None) -> None:
    settings = Settings(sanitizer_path=Path("/nonexistent/compute-sanitizer"))
    result = run_probe(ProbeRequest(probe="uninit-read"), workdir=tmp_path, settings=settings)
    assert result.outcome is Outcome.UNAVAILABLE
    assert "compute-sanitizer not found" in result.message and "nvidia-cuda-sanitizer-api" in result.message


@pytest.mark.parametrize("version", VERSIONS)
def test_uninit_read_initcheck_full_path(
    version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gpu_present: None,
    replay_settings: Settings,
) -> None:
    replay(monkeypatch, RUNS / f"uninit-read-initcheck-{version}")
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK), workdir=tmp_path, settings=replay_settings
    )
    assert result.outcome is Outcome.FINDINGS and result.outcome.exit_code == 1
    (finding,) = result.findings
    assert (finding.count, finding.file, finding.line, finding.case) == (
        24,
        "kernels/uninit_read.cu",
        6,
        "n=1024,k=1000",
    )
    assert result.sanitizer_version == version == finding.sanitizer_version
    assert result.cases[0].passed and "control fired" in result.cases[0].reason
    assert result.environment.sanitizer == version and result.environment.cuprobe
    assert (tmp_path / "run.xml").exists() and (tmp_path / "exit_code").read_text().strip() == "86"


@pytest.mark.parametrize("version", VERSIONS)
def test_uninit_read_memcheck_clean(
    version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gpu_present: None,
    replay_settings: Settings,
) -> None:
    replay(monkeypatch, RUNS / f"uninit-read-memcheck-{version}")
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.MEMCHECK), workdir=tmp_path, settings=replay_settings
    )
    assert result.outcome is Outcome.CLEAN, result.message
    assert result.summary_count == 0 and result.findings == []


def test_positive_control_that_comes_back_clean_is_sanitizer_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    # A broken instrument: the memcheck run's output (0 errors) where initcheck must fire.
    case = tmp_path / "case"
    shutil.copytree(RUNS / "uninit-read-memcheck-2026.4.0.0", case)
    shutil.copy(RUNS / "uninit-read-initcheck-2026.4.0.0" / "result.json", case / "result.json")
    replay(monkeypatch, case)
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK),
        workdir=tmp_path / "w",
        settings=replay_settings,
    )
    assert result.outcome is Outcome.SANITIZER_ERROR
    assert "positive control came back clean" in result.message


@pytest.mark.parametrize("version", VERSIONS)
def test_program_that_never_touches_cuda(
    version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gpu_present: None,
    replay_settings: Settings,
) -> None:
    replay(monkeypatch, capture(version, "memcheck_not_cuda"), run_target=True)
    result = run_probe(ProbeRequest(probe="selftest", tool=Tool.MEMCHECK), workdir=tmp_path, settings=replay_settings)
    assert result.outcome is Outcome.SANITIZER_ERROR and result.exit_code == 255
    assert "before its first CUDA call" in result.message


@pytest.mark.parametrize("version", VERSIONS)
def test_missing_program(
    version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gpu_present: None,
    replay_settings: Settings,
) -> None:
    replay(monkeypatch, capture(version, "memcheck_missing_program"))
    result = run_probe(ProbeRequest(probe="selftest", tool=Tool.MEMCHECK), workdir=tmp_path, settings=replay_settings)
    assert result.outcome is Outcome.PROBE_ERROR and "does not exist" in result.message


def test_exit_zero_without_sentinel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, capture(VERSIONS[1], "memcheck_ok"), run_target=True)
    result = run_probe(
        ProbeRequest(probe="selftest", tool=Tool.MEMCHECK, params={"behaviour": "exit0-no-sentinel"}),
        workdir=tmp_path,
        settings=replay_settings,
    )
    assert result.outcome is Outcome.PROBE_ERROR
    assert "did not finish" in result.message and "no result.json" in result.message


def test_probe_that_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, capture(VERSIONS[1], "probe_uninit-read_initcheck"), run_target=True)
    result = run_probe(
        ProbeRequest(probe="selftest", tool=Tool.MEMCHECK, params={"behaviour": "raise"}),
        workdir=tmp_path,
        settings=replay_settings,
    )
    assert result.outcome is Outcome.PROBE_ERROR
    assert "exited 1" in result.message and "raised on request" in result.message


@pytest.mark.parametrize("version", VERSIONS)
def test_probe_killed_by_a_signal(
    version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gpu_present: None,
    replay_settings: Settings,
) -> None:
    replay(monkeypatch, capture(version, "memcheck_kill"), run_target=True)
    result = run_probe(
        ProbeRequest(probe="selftest", tool=Tool.MEMCHECK, params={"behaviour": "kill"}),
        workdir=tmp_path,
        settings=replay_settings,
    )
    assert result.outcome is Outcome.CRASHED and result.signal == 9
    assert "SIGKILL" in result.message


def test_hang_is_timeout_and_the_whole_group_dies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, capture(VERSIONS[1], "memcheck_ok"), run_target=True)
    result = run_probe(
        ProbeRequest(probe="selftest", tool=Tool.MEMCHECK, timeout_s=2, params={"behaviour": "hang"}),
        workdir=tmp_path,
        settings=replay_settings,
    )
    assert result.outcome is Outcome.TIMEOUT and "2 s" in result.message
    assert result.duration_s < 10
    assert processes_mentioning(str(tmp_path)) == []  # the stand-in and the probe under it are both gone


def test_more_records_than_the_cap_is_truncated_and_still_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, capture(VERSIONS[0], "initcheck_many"))
    settings = replay_settings.model_copy(update={"max_records": 100})
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK, confirm=False), workdir=tmp_path, settings=settings
    )
    # The record cap never stops a run: every record is counted, the first 100 are kept.
    assert result.truncated and result.records == 300 == result.summary_count
    assert result.findings[0].count == 100
    assert result.outcome is Outcome.FINDINGS


def _case_with_xml(tmp_path: Path, xml: bytes) -> Path:
    case = tmp_path / "case"
    shutil.copytree(capture(VERSIONS[0], "initcheck_uninit"), case)
    (case / "run.xml").write_bytes(xml)
    return case


def test_truncated_xml_is_sanitizer_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    whole = (capture(VERSIONS[0], "initcheck_uninit") / "run.xml").read_bytes()
    replay(monkeypatch, _case_with_xml(tmp_path, whole[: len(whole) // 3]))
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK),
        workdir=tmp_path / "w",
        settings=replay_settings,
    )
    assert result.outcome is Outcome.SANITIZER_ERROR and "not well-formed" in result.message


def test_entity_expansion_xml_is_sanitizer_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    whole = (capture(VERSIONS[0], "initcheck_uninit") / "run.xml").read_text()
    bomb = '<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    hostile = whole.replace("\n", "\n" + bomb + "\n", 1).replace("<text>", "<text>&b;", 1)
    replay(monkeypatch, _case_with_xml(tmp_path, hostile.encode()))
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK),
        workdir=tmp_path / "w",
        settings=replay_settings,
    )
    assert result.outcome is Outcome.SANITIZER_ERROR and "refused" in result.message


def test_missing_summary_line_is_never_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    case = tmp_path / "case"
    shutil.copytree(RUNS / "uninit-read-memcheck-2026.4.0.0", case)
    lines = (case / "stdout.txt").read_text().splitlines(keepends=True)
    (case / "stdout.txt").write_text("".join(line for line in lines if "SUMMARY" not in line))
    replay(monkeypatch, case)
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.MEMCHECK),
        workdir=tmp_path / "w",
        settings=replay_settings,
    )
    assert result.outcome is Outcome.SANITIZER_ERROR and "no ERROR SUMMARY" in result.message


def test_bare_cpu_probe_runs_for_real(tmp_path: Path) -> None:
    result = run_probe(ProbeRequest(probe="selftest"), workdir=tmp_path)
    assert result.outcome is Outcome.CLEAN and result.tool is Tool.NONE
    violated = run_probe(ProbeRequest(probe="selftest", params={"behaviour": "violate"}), workdir=tmp_path)
    assert violated.outcome is Outcome.FINDINGS and "violation" in violated.message


def test_captures_folder_is_what_the_tests_read() -> None:
    assert sorted(p.name for p in CAPTURES.iterdir() if p.is_dir()) == list(VERSIONS)


def test_show_backtrace_reaches_the_sanitizer_command_and_the_reproducing_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, RUNS / f"uninit-read-initcheck-{VERSIONS[1]}")
    request = ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK, show_backtrace="device")
    result = run_probe(request, workdir=tmp_path, settings=replay_settings)
    assert result.outcome is Outcome.FINDINGS
    flag = result.command.index("--show-backtrace")
    assert result.command[flag + 1] == "device" and flag < result.command.index("--")
    default = run_probe(request.model_copy(update={"show_backtrace": None}), workdir=tmp_path, settings=replay_settings)
    assert "--show-backtrace" not in default.command
