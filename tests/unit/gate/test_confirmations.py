"""Each confirmation through the gate and every output: what fails, what is shown, what is counted.

The finding is the real one from uninit-read's H200 initcheck run; its confirmation is set per entry.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
from junitparser import Failure, JUnitXml

from cuprobe.contract import Tool
from cuprobe.service.gate import junit, markdown, sarif
from cuprobe.service.gate.baseline import Baseline, BaselineEntry
from cuprobe.service.gate.runs import EntryRuns
from cuprobe.service.gate.suite import Suite, SuiteEntry
from cuprobe.service.gate.verdict import GateReport, judge
from cuprobe.service.models import Confirmation, ConfirmationEvidence, Finding, Outcome, RunResult
from cuprobe.service.models.sweep import Sweep, SweepCase
from cuprobe.service.reports.markdown import markdown as sweep_markdown
from cuprobe.service.sanitizer.parse import parse_xml
from tests.conftest import BOX_ROOT, DATA, RUNS, VERSIONS


def real_finding(confirmation: Confirmation | None) -> Finding:
    (finding,) = parse_xml(RUNS / f"uninit-read-initcheck-{VERSIONS[1]}" / "run.xml", roots=[BOX_ROOT]).findings
    evidence = ConfirmationEvidence(reason=f"decided {confirmation}") if confirmation else None
    return finding.model_copy(update={"confirmation": confirmation, "confirmation_evidence": evidence})


def report_for(*confirmations: Confirmation | None, baseline: Baseline | None = None) -> GateReport:
    entries, runs = [], []
    for i, confirmation in enumerate(confirmations):
        entry = SuiteEntry(name=f"e{i}-{confirmation or 'none'}", probe="uninit-read", tool=Tool.INITCHECK)
        finding = real_finding(confirmation).model_copy(update={"signature": f"sig-{i}-{confirmation}"})
        result = RunResult(
            probe="uninit-read", tool=Tool.INITCHECK, outcome=Outcome.FINDINGS, message="m", findings=[finding]
        )
        entries.append(entry)
        runs.append(EntryRuns(entry, [result]))
    return judge(Suite(name="confirmations", probe=entries), runs, baseline)


@pytest.mark.parametrize(
    ("confirmation", "exit_code"),
    [
        (Confirmation.CONSEQUENTIAL, 1),
        (Confirmation.UNCONFIRMED, 1),
        (None, 1),
        (Confirmation.BENIGN, 0),
        (Confirmation.BLIND_SPOT, 0),
    ],
)
def test_only_consequential_unconfirmed_or_unconfirmable_fail_by_themselves(
    confirmation: Confirmation | None, exit_code: int
) -> None:
    assert report_for(confirmation).exit_code == exit_code


def test_blind_spots_and_benign_reads_are_shown_and_counted_in_every_output(tmp_path: Path) -> None:
    report = report_for(Confirmation.BLIND_SPOT, Confirmation.BENIGN, Confirmation.CONSEQUENTIAL)
    assert report.exit_code == 1
    line = (
        "1 failing finding(s); by confirmation: 1 consequential, 1 benign, 1 blind-spot, 0 unconfirmed, 0 not confirmed"
    )
    assert report.summary_line() == line

    text = markdown.render(report)
    assert line in text
    assert "### New findings (1)" in text and "| new | consequential | e2-consequential |" in text
    blind = text.split("### Blind spots of the tool (shown, never failing) (1)")[1].split("###")[0]
    assert "e0-blind-spot" in blind and "decided blind-spot" in blind
    assert "e1-benign" in text.split("### Benign reads")[1].split("###")[0]

    log = sarif.build(report)
    jsonschema.Draft4Validator(json.loads((DATA / "sarif-schema-2.1.0.json").read_text())).validate(log)
    levels = {r["properties"]["suiteEntry"]: r["level"] for r in log["runs"][0]["results"]}
    assert levels == {"e0-blind-spot": "note", "e1-benign": "note", "e2-consequential": "error"}
    assert log["runs"][0]["properties"]["confirmations"]["blind-spot"] == 1
    assert all(r["properties"]["confirmation"] for r in log["runs"][0]["results"])

    junit.write(report, tmp_path / "j.xml")
    suites = {s.name: s for s in JUnitXml.fromfile(str(tmp_path / "j.xml"))}
    blind_suite = suites["confirmations.e0-blind-spot"]
    assert blind_suite.properties() and {p.name: p.value for p in blind_suite.properties()}["cuprobe.blind-spot"] == "1"
    (case,) = list(blind_suite)
    assert not any(isinstance(r, Failure) for r in case.result) and "[blind-spot]" in (case.system_out or "")
    (failing,) = list(suites["confirmations.e2-consequential"])
    assert any(isinstance(r, Failure) for r in failing.result)


def test_a_benign_read_can_be_baselined_as_known() -> None:
    known = Baseline(finding=[BaselineEntry(signature="sig-0-benign", reason="masked padding, known")])
    report = report_for(Confirmation.BENIGN, baseline=known)
    assert report.exit_code == 0 and report.findings[0].status.value == "baselined"


def test_repeats_or_cases_disagreeing_keep_the_confirmation_that_fails() -> None:
    entry = SuiteEntry(name="batched", probe="uninit-read", tool=Tool.INITCHECK)
    blind = real_finding(Confirmation.BLIND_SPOT).model_copy(update={"case": "a"})
    worse = real_finding(Confirmation.CONSEQUENTIAL).model_copy(update={"case": "b"})
    result = RunResult(
        probe="uninit-read", tool=Tool.INITCHECK, outcome=Outcome.FINDINGS, message="m", findings=[blind, worse]
    )
    report = judge(Suite(name="s", probe=[entry]), [EntryRuns(entry, [result])], None)
    (item,) = report.findings
    assert item.finding.confirmation is Confirmation.CONSEQUENTIAL and report.exit_code == 1


def test_sweep_report_counts_each_confirmation() -> None:
    now = datetime.now(UTC)
    cases = [
        SweepCase(
            key=f"k{i}",
            entry="e",
            probe="uninit-read",
            tool=Tool.INITCHECK,
            process=0,
            batched=False,
            outcome=Outcome.FINDINGS,
            findings=[real_finding(c)],
        )
        for i, c in enumerate([Confirmation.BLIND_SPOT, Confirmation.BLIND_SPOT, Confirmation.BENIGN])
    ]
    text = sweep_markdown(Sweep(id="s" * 12, definition="d", started_at=now, cases=cases))
    assert "1 benign, 2 blind-spot, 0 unconfirmed" in text
    assert text.count("| blind-spot | decided blind-spot |") == 2
