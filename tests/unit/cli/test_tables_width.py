"""The findings table of every real captured run reads at 80 and 120 columns: kinds whole, no all-empty
columns, the API call and error of api-error records, nothing past the edge."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from cuprobe.service.cli.render import findings_table
from cuprobe.service.sanitizer.parse import parse_xml
from tests.conftest import CAPTURES, xml_of

CASES = sorted(p.parent for p in CAPTURES.glob("*/*/run.xml*"))


def _render(case: Path, width: int) -> tuple[list[str], str]:
    parsed = parse_xml(xml_of(case), roots=["/work/main"])
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(findings_table(parsed.findings))
    return [f.kind for f in parsed.findings], console.export_text()


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_findings_table_reads_at(case: Path, width: int) -> None:
    kinds, text = _render(case, width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines)
    for kind in kinds:
        assert any(kind in line for line in lines), f"kind {kind} split over lines:\n{text}"
    header = next((line for line in lines if "kind" in line), "")
    for column in ("threads", "flags", "case", "hazards"):
        assert column not in header or (column == "hazards" and "hazard" in text.lower())


def test_api_errors_say_which_call_failed_and_how() -> None:
    _, text = _render(CAPTURES / "2026.4.0.0" / "memcheck_leak_api", 80)
    assert "cudaFree: cudaErrorInvalidValue" in text and "cudaMemcpy: cudaErrorInvalidValue" in text
    assert "(invalid argument)" in text
    _, text = _render(CAPTURES / "2025.3.1.0" / "memcheck_oob_then_more", 80)
    assert "cudaDeviceSynchronize: cudaErrorLaunchFailure" in text and "fallout" in text


def test_hazards_column_only_where_the_tool_counts_them() -> None:
    _, race = _render(CAPTURES / "2026.4.0.0" / "racecheck_race_analysis", 80)
    _, oob = _render(CAPTURES / "2026.4.0.0" / "memcheck_oob", 80)
    assert "hazards" in race and "4208" in race and "hazards" not in oob
