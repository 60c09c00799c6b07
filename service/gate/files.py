"""pytest files run as one sanitized process each (`per = "file"`), and what each of their tests gets from it.

A file whose process comes back with no sanitizer record, every test reported by pytest, gives each test its own
result from pytest's reports. Any other file (a sanitizer record, a crash, a hang, a test pytest never reported) is
run again one test per process, so that every finding is named after its test by construction: compute-sanitizer's
records name no test, and memcheck's first device error ends the CUDA context of every test after it.
"""

from __future__ import annotations

from cuprobe.contract import Tool
from cuprobe.service.gate.suite import FileRun
from cuprobe.service.models import RunResult
from cuprobe.service.sanitizer.classify import test_in_process_outcome


def why_not_split(file: FileRun, result: RunResult) -> str | None:
    """Why a file's run cannot give its tests their results (then each runs alone), or None when it can."""
    if not result.outcome.ran:
        return f"the file's process ended {result.outcome.value}: {result.message}"
    if result.records > result.control_records:
        return f"the sanitizer reported {result.records - result.control_records} record(s) in the file's process"
    if others := [f for f in result.findings if f.kind != "expectation-violation"]:
        return f"{len(others)} finding(s) in the file's process"
    verdicts = {case.id: case for case in result.cases}
    reported = {case_id for case_id, case in verdicts.items() if "pytest" in case.observations}
    if missing := [t.case for t in file.tests if t.case not in reported]:
        return f"pytest reported no result for {len(missing)} test(s) in the file's process (first: {missing[0]})"
    return None


def split(file: FileRun, result: RunResult) -> list[RunResult]:
    """Each test's result from a file's run that `why_not_split` accepts, in the order of `file.tests`."""
    verdicts = {case.id: case for case in result.cases}
    how = "bare" if result.tool is Tool.NONE else "sanitized"
    process = f"one {how} process with the {len(file.tests)} tests of {file.path}"
    out = []
    for test in file.tests:
        assert test.case is not None
        verdict = verdicts[test.case]
        findings = [f for f in result.findings if f.case == test.case]
        said = test_in_process_outcome(
            str(verdict.observations["pytest"]),
            str(verdict.observations.get("pytest_message", "")) or "; ".join(f.message for f in findings),
            len(findings),
            process,
        )
        out.append(
            result.model_copy(
                update={
                    "params": test.params,
                    "outcome": said.outcome,
                    "message": said.message,
                    "findings": findings,
                    "cases": [verdict],
                    "records": 0,
                    "summary_count": 0 if result.summary_count is not None else None,
                    "duration_s": float(verdict.observations.get("pytest_seconds", 0.0)),
                }
            )
        )
    return out


def unexplained(file_result: RunResult, alone: list[RunResult]) -> RunResult | None:
    """The file's own result, kept when its tests run alone explain nothing of it: a sanitizer record that no test
    alone shows, or a crash or hang of the whole file that no test alone has, is still the suite's, never dropped."""
    if file_result.records > file_result.control_records:
        explained = any(r.records > r.control_records for r in alone)
    else:
        explained = any(not r.outcome.ran for r in alone)
    if explained:
        return None
    note = "seen when the file ran as one process; none of its tests shows it when run alone"
    return file_result.model_copy(update={"message": f"{file_result.message} ({note})"})
