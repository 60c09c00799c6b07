"""Severity as the sanitizer ranks it (captured racecheck runs), and leak signatures of their own."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from cuprobe.service.models import Outcome, RunResult, Tool, exit_code_for
from cuprobe.service.sanitizer.parse import parse_xml
from cuprobe.service.sanitizer.summary import read_summary
from tests.conftest import BOX_ROOT, VERSIONS, capture, xml_of


def _stdout(version: str, case: str) -> str:
    folder = capture(version, case)
    plain = folder / "stdout.txt"
    return plain.read_text() if plain.exists() else gzip.decompress((folder / "stdout.txt.gz").read_bytes()).decode()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("racecheck_race_hazard", {"2025.3.1.0": (3840, 496), "2026.4.0.0": (3712, 496)}),
        ("sample_warp_error_hazard", {"2025.3.1.0": (0, 248), "2026.4.0.0": (0, 248)}),  # NVIDIA's sample
        ("sample_block_error_hazard", {"2025.3.1.0": (384, 124), "2026.4.0.0": (384, 124)}),
    ],
)
def test_hazard_records_are_errors_and_warnings_as_the_summary_counts(
    version: str, case: str, expected: dict[str, tuple[int, int]]
) -> None:
    parsed = parse_xml(xml_of(capture(version, case)), roots=[BOX_ROOT], max_records=10**6)
    summary = read_summary(_stdout(version, case))
    errors = sum(f.count for f in parsed.findings if f.severity == "error")
    warnings = sum(f.count for f in parsed.findings if f.severity == "warning")
    assert (errors, warnings) == (summary.racecheck_errors, summary.racecheck_warnings) == expected[version]
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
    sample = parse_xml(xml_of(capture(version, "sample_memcheck_demo_leak")), roots=[BOX_ROOT]).findings
    assert [f.signature for f in sample if f.kind == "leak"] == ["memcheck|leak|size=1024|generic|@main"]


def test_warnings_only_end_findings_but_exit_0_unless_fail_on_warning() -> None:
    parsed = parse_xml(xml_of(capture(VERSIONS[0], "racecheck_race_hazard")), roots=[BOX_ROOT], max_records=10**6)
    warnings = [f for f in parsed.findings if f.severity == "warning"]
    result = RunResult(probe="command", tool=Tool.RACECHECK, outcome=Outcome.FINDINGS, message="m", findings=warnings)
    assert exit_code_for(result, "error") == 0 and exit_code_for(result, "warning") == 1
    everything = result.model_copy(update={"findings": parsed.findings})
    assert exit_code_for(everything, "error") == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_an_info_level_analysis_record_is_a_warning(version: str, tmp_path: Path) -> None:
    """With racecheck_detect_level info (cuprobe then passes --print-level info), records at level Info reach the
    XML. None is captured yet: this is the real analysis capture with its one record's level set to Info."""
    text = xml_of(capture(version, "racecheck_race_analysis")).read_text()
    assert text.count("<level>Error</level>") == 1
    xml = tmp_path / "info.xml"
    xml.write_text(text.replace("<level>Error</level>", "<level>Info</level>"))
    (finding,) = parse_xml(xml, roots=[BOX_ROOT]).findings
    assert finding.severity == "warning"
