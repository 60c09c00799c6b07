"""Severity as the sanitizer ranks it (captured racecheck runs), and leak signatures of their own."""

from __future__ import annotations

import gzip

import pytest

from service.models import Outcome, RunResult, Tool, exit_code_for
from service.sanitizer.parse import parse_xml
from service.sanitizer.summary import read_summary
from tests.conftest import BOX_ROOT, VERSIONS, capture, xml_of


def _stdout(version: str, case: str) -> str:
    folder = capture(version, case)
    plain = folder / "stdout.txt"
    return plain.read_text() if plain.exists() else gzip.decompress((folder / "stdout.txt.gz").read_bytes()).decode()


@pytest.mark.parametrize("version", VERSIONS)
def test_hazard_records_are_errors_and_warnings_as_the_summary_counts(version: str) -> None:
    parsed = parse_xml(xml_of(capture(version, "racecheck_race_hazard")), roots=[BOX_ROOT], max_records=10**6)
    summary = read_summary(_stdout(version, "racecheck_race_hazard"))
    errors = sum(f.count for f in parsed.findings if f.severity == "error")
    warnings = sum(f.count for f in parsed.findings if f.severity == "warning")
    assert (errors, warnings) == (summary.racecheck_errors, summary.racecheck_warnings)
    assert warnings == 496 and errors in (3840, 3712)
    assert all(f.signature.endswith("|warning") for f in parsed.findings if f.severity == "warning")


@pytest.mark.parametrize("version", VERSIONS)
def test_analysis_record_carries_its_level(version: str) -> None:
    (finding,) = parse_xml(xml_of(capture(version, "racecheck_race_analysis")), roots=[BOX_ROOT]).findings
    assert finding.severity == "error"


@pytest.mark.parametrize("version", VERSIONS)
def test_leak_signature_is_kind_size_and_first_user_frame(version: str) -> None:
    findings = parse_xml(xml_of(capture(version, "memcheck_leak_api")), roots=[BOX_ROOT]).findings
    leak = next(f for f in findings if f.kind == "leak")
    assert leak.signature == "memcheck|leak|size=4096|generic|@main"


def test_warnings_only_end_findings_but_exit_0_unless_fail_on_warning() -> None:
    parsed = parse_xml(xml_of(capture(VERSIONS[0], "racecheck_race_hazard")), roots=[BOX_ROOT], max_records=10**6)
    warnings = [f for f in parsed.findings if f.severity == "warning"]
    result = RunResult(probe="command", tool=Tool.RACECHECK, outcome=Outcome.FINDINGS, message="m", findings=warnings)
    assert exit_code_for(result, "error") == 0 and exit_code_for(result, "warning") == 1
    everything = result.model_copy(update={"findings": parsed.findings})
    assert exit_code_for(everything, "error") == 1
