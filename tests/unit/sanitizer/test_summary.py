"""The sanitizer's own text lines, from real captured stdout."""

from __future__ import annotations

import gzip

import pytest

from cuprobe.service.sanitizer.summary import read_summary
from tests.conftest import VERSIONS, capture


def stdout(version: str, case: str) -> str:
    path = capture(version, case) / "stdout.txt"
    if path.exists():
        return path.read_text()
    return gzip.decompress((capture(version, case) / "stdout.txt.gz").read_bytes()).decode()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "case,errors",
    [
        ("initcheck_uninit", 24),
        ("initcheck_ok", 0),
        ("memcheck_leak_api", None),
        ("synccheck_syncwarp", 32),
        ("racecheck_race_analysis", 1),
    ],
)
def test_summary_counts(version: str, case: str, errors: int | None) -> None:
    summary = read_summary(stdout(version, case))
    expected = errors if errors is not None else {"2025.3.1.0": 3, "2026.4.0.0": 4}[version]
    assert summary.present and summary.errors == expected


def test_print_limit_cap_is_reported_as_a_cap() -> None:
    summary = read_summary(stdout(VERSIONS[0], "initcheck_many_default_limit"))
    assert summary.errors == 300 and summary.not_printed == 200


def test_racecheck_hazard_summary() -> None:
    summary = read_summary(stdout(VERSIONS[0], "racecheck_race_hazard"))
    assert (summary.errors, summary.racecheck_errors, summary.racecheck_warnings) == (4336, 3840, 496)


@pytest.mark.parametrize("version", VERSIONS)
def test_markers(version: str) -> None:
    assert read_summary(stdout(version, "memcheck_not_cuda")).not_cuda
    assert not read_summary(stdout(version, "memcheck_not_cuda")).present
    assert read_summary(stdout(version, "memcheck_missing_program")).missing_program
    assert read_summary(stdout(version, "memcheck_kill")).process_failed
    assert not read_summary(stdout(version, "memcheck_exit3")).process_failed
    assert read_summary(stdout(version, "memcheck_leak_api")).leaked_bytes == 4096
