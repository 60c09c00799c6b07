"""JUnit XML: one testcase per probe case; could-not-run cases are errors (never skips), new findings failures."""

from __future__ import annotations

import re
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, TestCase, TestSuite
from junitparser.junitparser import FinalResult

from cuprobe.service.gate.verdict import GateFinding, GateReport, Status
from cuprobe.service.models import Confirmation
from cuprobe.service.reports.table import clipped

# Characters XML 1.0 cannot hold (a test's coloured or binary output: ESC, BEL, NUL), shown escaped instead.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
RUN_CASE = "(run)"  # the testcase of a run that produced no cases (it could not start)
UNATTRIBUTED = "(unattributed)"  # findings no case's allocations claimed


def _safe(text: str) -> str:
    """`text` with the characters XML cannot hold written as \\xNN."""
    return NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _describe(item: GateFinding) -> str:
    f = item.finding
    where = f"{f.location()} ({f.kernel or '-'})"
    confirmed = (
        f"\n  confirmation {f.confirmation.value}: {f.confirmation_evidence.reason if f.confirmation_evidence else ''}"
        if f.confirmation
        else ""
    )
    return (
        f"{item.label_confirmed}: {f.kind} at {where}, seen {item.seen}/{item.repeats}, count {f.count}: {f.message}\n"
        f"  signature {f.signature}{confirmed}"
    )


def build(report: GateReport) -> JUnitXml:
    """The JUnit document for `report` (one testsuite per suite entry)."""
    xml = JUnitXml(report.suite.name)
    for runs in report.runs:
        entry = runs.entry
        suite = TestSuite(_safe(f"{report.suite.name}.{entry.name}"))
        shown = [f for f in report.findings if f.entry == entry.name and f.status is not Status.EXPECTED]
        for kind in Confirmation:  # blind spots and benign reads never fail, so they are counted here
            suite.add_property(f"cuprobe.{kind.value}", str(sum(f.finding.confirmation is kind for f in shown)))
        case_ids = list(dict.fromkeys(case.id for result in runs.results for case in result.cases)) or [RUN_CASE]
        mine = [f for f in report.findings if f.entry == entry.name]
        ids = set(case_ids)
        by_case: dict[str, list[GateFinding]] = {}
        for item in mine:
            case = (
                item.finding.case if item.finding.case in ids else case_ids[0] if len(case_ids) == 1 else UNATTRIBUTED
            )
            by_case.setdefault(case, []).append(item)
        if UNATTRIBUTED in by_case:
            case_ids.append(UNATTRIBUTED)
        not_run = [n for n in report.not_run if n.entry == entry.name]
        controls = [c for c in report.failed_controls if c.entry == entry.name]
        for case_id in case_ids:
            test = TestCase(
                _safe(case_id),
                _safe(f"{entry.name} [{entry.probe} {entry.tool.value}]"),
                sum(r.duration_s for r in runs.results),
            )
            results: list[FinalResult] = []
            for n in not_run:
                error = Error(
                    _safe(clipped(f"repeat {n.repeat + 1}: {n.result.outcome.value}: {n.result.message}", 500)),
                    n.result.outcome.value,
                )
                error.text = _safe(n.result.message)
                results.append(error)
            for c in controls:
                if c.case in (case_id, "-"):
                    said = clipped(f"positive control came back clean: {c.reason}", 500)
                    results.append(Error(_safe(said), "positive-control-clean"))
            items = by_case.get(case_id, [])
            failing = [i for i in items if i.fails]
            if failing:
                failure = Failure(
                    _safe(
                        f"{len(failing)} new or expired finding(s): "
                        + clipped("; ".join(i.label + " " + i.finding.location() for i in failing), 400)
                    ),
                    "finding",
                )
                failure.text = _safe("\n".join(_describe(i) for i in failing))
                results.append(failure)
            test.result = results
            passing = [i for i in items if not i.fails]
            if passing:
                test.system_out = _safe("\n".join(_describe(i) for i in passing))
            suite.add_testcase(test)
        xml.add_testsuite(suite)
    return xml


def write(report: GateReport, path: Path) -> None:
    build(report).write(str(path), pretty=True)
