"""The outcome rules on real captured output: a summary that counts errors the XML lacks is never clean."""

from __future__ import annotations

import pytest

from cuprobe.contract import Tool
from cuprobe.service.models import Outcome
from cuprobe.service.sanitizer.classify import RunEvidence, classify
from cuprobe.service.sanitizer.parse import parse_xml
from cuprobe.service.sanitizer.summary import read_summary
from tests.conftest import VERSIONS, capture, xml_of


@pytest.mark.parametrize("probe_expected", [True, False])
def test_records_missing_from_the_xml_are_lost_records_on_every_path(probe_expected: bool) -> None:
    summary = read_summary((capture(VERSIONS[0], "initcheck_uninit") / "stdout.txt").read_text())
    empty = parse_xml(xml_of(capture(VERSIONS[0], "initcheck_ok")), tool=Tool.INITCHECK, roots=[])
    assert summary.errors == 24 and empty.records == 0
    # The runner's path: the sanitizer exited with its error code and the probe left no result.json.
    verdict = classify(
        RunEvidence(
            tool=Tool.INITCHECK, returncode=86, summary=summary, parsed=empty, probe_expected=probe_expected
        )
    )
    assert verdict.outcome is Outcome.SANITIZER_ERROR
    assert "counts 24 errors but the XML held 0" in verdict.message


def test_saved_output_with_a_zero_summary_and_no_records_is_clean() -> None:
    case = capture(VERSIONS[0], "initcheck_ok")
    summary = read_summary((case / "stdout.txt").read_text())
    parsed = parse_xml(xml_of(case), tool=Tool.INITCHECK, roots=[])
    verdict = classify(
        RunEvidence(tool=Tool.INITCHECK, returncode=None, summary=summary, parsed=parsed, probe_expected=False)
    )
    assert verdict.outcome is Outcome.CLEAN


@pytest.mark.parametrize("probe_expected", [True, False])
def test_a_record_cap_that_kept_none_of_the_counted_errors_is_never_clean(probe_expected: bool) -> None:
    case = capture(VERSIONS[1], "initcheck_uninit")
    summary = read_summary((case / "stdout.txt").read_text())
    capped = parse_xml(xml_of(case), tool=Tool.INITCHECK, roots=[], max_records=0)
    assert capped.truncated and capped.records == 24 and not capped.findings
    verdict = classify(
        RunEvidence(tool=Tool.INITCHECK, returncode=0, summary=summary, parsed=capped, probe_expected=probe_expected)
    )
    assert verdict.outcome is Outcome.SANITIZER_ERROR and "kept none of them" in verdict.message
