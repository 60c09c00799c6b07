"""Positive controls, as the gate and the nightly sweep both hold them: every sanitizer tool a run uses needs an
entry that plants a defect that tool must see, and a control whose planted finding is missing fails the run (a
[[test]] control's run says so itself: its case's expectation is not met, so the run is a sanitizer error)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from cuprobe.contract import Tool
from cuprobe.service.models import CaseVerdict, Finding, RunResult


class Controlled(Protocol):
    """An entry of a suite or a sweep: the tool it runs under, and whether it is a positive control."""

    @property
    def tool(self) -> Tool: ...
    @property
    def control(self) -> bool: ...


def uncontrolled(entries: Iterable[Controlled]) -> list[Tool]:
    """The sanitizer tools the entries use that no entry marked `control = true` covers, sorted."""
    everything = list(entries)
    used = {entry.tool for entry in everything} - {Tool.NONE}
    return sorted(used - {entry.tool for entry in everything if entry.control})


NO_CONTROL = "a broken sanitizer tool would read as clean"


def _case_of(finding: Finding, result: RunResult) -> CaseVerdict | None:
    for case in result.cases:
        if case.id == finding.case or (finding.case is None and len(result.cases) == 1):
            return case
    return None


def expected(finding: Finding, result: RunResult, control: bool) -> bool:
    """A finding a positive control planted: in a control entry, of its case's expected tool and kind."""
    case = _case_of(finding, result) if control else None
    exp = case.expectation if case else None
    return bool(exp and not exp.clean and exp.tool is result.tool and exp.kind == finding.kind)


def fired(result: RunResult) -> bool:
    """Whether a positive control entry's run saw the defect it plants."""
    return any(expected(f, result, True) for f in result.findings)
