"""The parser on real sanitizer output captured on the H200 (tests/data/captures)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.sanitizer.parse import parse_xml
from tests.conftest import BOX_ROOT, VERSIONS, capture, xml_of


def parse(version: str, case: str, **kw: object) -> object:
    return parse_xml(xml_of(capture(version, case)), roots=[BOX_ROOT], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", VERSIONS)
def test_initcheck_groups_24_reads_into_one_finding(version: str) -> None:
    result = parse_xml(xml_of(capture(version, "initcheck_uninit")), roots=[BOX_ROOT])
    assert result.records == 24 and not result.truncated and result.error is None
    (finding,) = result.findings
    assert (
        finding.signature
        == "initcheck|uninitialized-global-read|double_all|kernels/uninit_read.cu:6|global-read-4"
    )
    assert (finding.count, finding.file, finding.line) == (24, "kernels/uninit_read.cu", 6)
    assert finding.threads["x"] == [232, 255] and finding.blocks["x"] == [3, 3]
    assert len(finding.addresses) == 3


@pytest.mark.parametrize("version", VERSIONS)
def test_signature_is_stable_across_sanitizer_versions_and_machines(version: str) -> None:
    here = parse_xml(xml_of(capture(version, "initcheck_uninit")), roots=[BOX_ROOT]).findings[0]
    other = parse_xml(xml_of(capture(VERSIONS[0], "initcheck_many")), roots=[BOX_ROOT]).findings[0]
    assert here.signature == other.signature  # 24 reads in block 3 vs 300 reads from block 0: same defect
    unrooted = parse_xml(xml_of(capture(version, "initcheck_uninit")), roots=[]).findings[0]
    assert not unrooted.file.startswith("/")  # never absolute, even when the root is unknown


@pytest.mark.parametrize("version", VERSIONS)
def test_memcheck_oob_first_error_and_its_fallout(version: str) -> None:
    findings = parse_xml(xml_of(capture(version, "memcheck_oob")), roots=[BOX_ROOT]).findings
    real = [f for f in findings if not f.fallout]
    assert [(f.kind, f.file, f.line, f.count) for f in real] == [
        ("invalid-global-write", "kernels/planted.cu", 8, 1)
    ]
    fallout = [f for f in findings if f.fallout]
    assert fallout and all(f.kind in ("api-error", "sanitizer-sticky-error-detected") for f in fallout)


def test_memcheck_counts_differ_between_versions_and_are_recorded() -> None:
    counts = {v: parse_xml(xml_of(capture(v, "memcheck_oob")), roots=[BOX_ROOT]).records for v in VERSIONS}
    assert counts == {"2025.3.1.0": 3, "2026.4.0.0": 4}  # 2026.4 adds "Sticky error detected"


@pytest.mark.parametrize("version", VERSIONS)
def test_memcheck_leak_and_api_errors_name_the_user_call_site(version: str) -> None:
    findings = parse_xml(xml_of(capture(version, "memcheck_leak_api")), roots=[BOX_ROOT]).findings
    kinds = sorted(f.kind for f in findings if f.kind != "sanitizer-allocation-not-found")
    assert kinds == ["api-error", "api-error", "leak"]
    leak = next(f for f in findings if f.kind == "leak")
    assert leak.size == 4096 and leak.signature.endswith("@main")
    assert not any(f.fallout for f in findings)  # no precise error came first: these are real API errors


@pytest.mark.parametrize("version", VERSIONS)
def test_racecheck_analysis_keeps_the_hazard_count(version: str) -> None:
    (finding,) = parse_xml(xml_of(capture(version, "racecheck_race_analysis")), roots=[BOX_ROOT]).findings
    assert (finding.kind, finding.file, finding.line, finding.count) == (
        "shared-memory-race",
        "kernels/planted.cu",
        20,
        1,
    )
    assert finding.hazards == {"2025.3.1.0": 2176 + 2032, "2026.4.0.0": 2048 + 2160}[version]


@pytest.mark.parametrize("version,records", [("2025.3.1.0", 4336), ("2026.4.0.0", 4208)])
def test_racecheck_hazard_mode_groups_thousands_of_records(version: str, records: int) -> None:
    result = parse_xml(xml_of(capture(version, "racecheck_race_hazard")), roots=[BOX_ROOT])
    assert result.records == records
    assert sum(f.count for f in result.findings) == records
    assert {f.file for f in result.findings} == {"kernels/planted.cu"}
    assert 2 <= len(result.findings) <= 8  # a handful of distinct (line, type) pairs, not thousands


@pytest.mark.parametrize("version", VERSIONS)
def test_synccheck_location_is_the_user_frame_not_the_cuda_header(version: str) -> None:
    (finding,) = parse_xml(xml_of(capture(version, "synccheck_syncwarp")), roots=[BOX_ROOT]).findings
    assert (finding.kernel, finding.file, finding.line, finding.count) == (
        "bad_syncwarp",
        "kernels/planted.cu",
        33,
        32,
    )
    assert finding.kind == "barrier-error-invalid-arguments"


def test_records_cap_keeps_counting() -> None:
    # Past the cap records are counted (all 300 the summary reports) and their memory flagged, but not kept.
    result = parse_xml(xml_of(capture(VERSIONS[0], "initcheck_many")), roots=[BOX_ROOT], max_records=50)
    assert result.truncated and result.records == 300 and result.kept == 50 and result.findings[0].count == 50
    (flagged,) = result.flagged.values()
    assert flagged.records == 300 and flagged.unmapped == 300  # no allocation map for the harness program


def test_byte_cap_truncates_without_error() -> None:
    result = parse_xml(xml_of(capture(VERSIONS[0], "initcheck_many")), roots=[BOX_ROOT], max_bytes=100_000)
    assert result.truncated and result.error is None
    assert 0 < result.records < 300


def test_cut_short_xml_is_an_error(tmp_path: Path) -> None:
    whole = xml_of(capture(VERSIONS[0], "initcheck_uninit")).read_bytes()
    cut = tmp_path / "run.xml"
    cut.write_bytes(whole[: len(whole) // 2])
    result = parse_xml(cut, roots=[BOX_ROOT])
    assert result.error and "not well-formed" in result.error and not result.truncated


def _with_doctype(tmp_path: Path, doctype: str) -> Path:
    real = xml_of(capture(VERSIONS[0], "initcheck_uninit")).read_text()
    body = real.split("\n", 1)[1].replace("<text>Uninitialized", "<text>&boom;Uninitialized", 1)
    hostile = tmp_path / "hostile.xml"
    hostile.write_text('<?xml version="1.0" encoding="utf-8"?>\n' + doctype + "\n" + body)
    return hostile


def test_entity_expansion_is_refused_unparsed(tmp_path: Path) -> None:
    lols = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    path = _with_doctype(tmp_path, f'<!DOCTYPE r [<!ENTITY lol0 "lol">{lols}<!ENTITY boom "&lol9;">]>')
    result = parse_xml(path, roots=[BOX_ROOT])
    assert result.hostile and result.records == 0 and "DTD" in (result.error or "")


def test_external_entity_is_refused(tmp_path: Path) -> None:
    path = _with_doctype(tmp_path, '<!DOCTYPE r [<!ENTITY boom SYSTEM "file:///etc/passwd">]>')
    result = parse_xml(path, roots=[BOX_ROOT])
    assert result.hostile and result.records == 0


def test_undeclared_entity_is_an_error_not_a_finding(tmp_path: Path) -> None:
    path = _with_doctype(tmp_path, "")
    result = parse_xml(path, roots=[BOX_ROOT])
    assert result.error and not result.hostile


def test_gzipped_capture_reads_like_plain(tmp_path: Path) -> None:
    plain = tmp_path / "run.xml"
    plain.write_bytes(gzip.decompress(xml_of(capture(VERSIONS[0], "initcheck_many")).read_bytes()))
    assert parse_xml(plain, roots=[BOX_ROOT]).records == 300


def test_tool_is_inferred_from_record_kinds() -> None:
    assert parse_xml(xml_of(capture(VERSIONS[0], "synccheck_syncwarp")), roots=[]).tool is Tool.SYNCCHECK
