"""The gate verdict (docs/gate.md, docs/outcomes.md): 3 could not run or a control came back clean, 1 new or expired
findings, else 0."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum

from cuprobe.service.gate.baseline import Baseline, BaselineEntry
from cuprobe.service.gate.runs import EntryRuns
from cuprobe.service.gate.suite import Suite
from cuprobe.service.models import (
    Confirmation,
    Evidence,
    ExitCode,
    Finding,
    RunResult,
    strongest_confirmation,
)
from cuprobe.service.models.controls import expected, fired


class Status(StrEnum):
    """What a finding means for the merge."""

    NEW = "new"
    EXPIRED = "expired"
    BASELINED = "baselined"
    EXPECTED = "control fired"
    WARNING = "warning (the suite fails on errors only)"

    @property
    def fails(self) -> bool:
        return self in (Status.NEW, Status.EXPIRED)


@dataclass
class GateFinding:
    """One distinct finding of one suite entry, over all its repeats."""

    entry: str
    finding: Finding
    seen: int
    repeats: int
    status: Status
    baseline: BaselineEntry | None = None
    # "from OLD to NEW" when the finding is new and its tool's sanitizer is not the one the baseline was recorded with
    sanitizer_change: str | None = None

    @property
    def fails(self) -> bool:
        """New or expired, and not a read the confirmer showed harmless (benign) or the tool's blind spot."""
        return self.status.fails and self.finding.fails_alone

    @property
    def confirmation(self) -> str:
        """The finding's confirmation as outputs show it (`-` where there is none: other tools)."""
        return self.finding.confirmation.value if self.finding.confirmation else "-"

    @property
    def label_confirmed(self) -> str:
        """The label with the confirmation, for outputs that have no column of their own for it."""
        return self.label + (f" [{self.finding.confirmation.value}]" if self.finding.confirmation else "")

    @property
    def label(self) -> str:
        """The status as every output shows it, with the sanitizer-version label when it applies."""
        text = self.status.value
        if self.baseline and self.baseline.flaky:
            text += " (flaky)"
        if self.sanitizer_change:
            text += f" (sanitizer version changed {self.sanitizer_change}: may be the new sanitizer, not the code)"
        return text


@dataclass
class NotRun:
    entry: str
    repeat: int
    result: RunResult
    case: str | None = None  # a [[test]] process's test (node id, test name)

    @property
    def label(self) -> str:
        """The entry as the outputs name it: with its test where it runs one (`ops.0003 (tests/test_ops.py::t)`)."""
        return f"{self.entry} ({self.case})" if self.case else self.entry


@dataclass
class FailedControl:
    entry: str
    case: str
    reason: str


@dataclass
class GateReport:
    """Everything the outputs show; `exit_code` is the verdict."""

    suite: Suite
    runs: list[EntryRuns]
    findings: list[GateFinding] = field(default_factory=list)
    not_run: list[NotRun] = field(default_factory=list)
    failed_controls: list[FailedControl] = field(default_factory=list)
    fixed: list[BaselineEntry] = field(default_factory=list)
    flaky_unseen: list[BaselineEntry] = field(default_factory=list)
    unchecked: list[BaselineEntry] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        if self.not_run or self.failed_controls:
            return ExitCode.NOT_RUN
        return ExitCode.FINDINGS if any(f.fails for f in self.findings) else ExitCode.CLEAN

    def confirmation_counts(self) -> dict[str, int]:
        """Findings (not control hits) per confirmation; `not confirmed` for other tools or confirmation off."""
        counts = {c.value: 0 for c in Confirmation}
        counts["not confirmed"] = 0
        for f in self.findings:
            if f.status is not Status.EXPECTED:
                counts[f.confirmation if f.finding.confirmation else "not confirmed"] += 1
        return counts

    def summary_line(self) -> str:
        """One line counting each kind: what fails, and each confirmation (blind spots always shown)."""
        counts = self.confirmation_counts()
        return (
            f"{sum(f.fails for f in self.findings)} failing finding(s); by confirmation: "
            + ", ".join(f"{n} {kind}" for kind, n in counts.items())
        )

    @property
    def verdict(self) -> str:
        return {
            ExitCode.CLEAN: "pass",
            ExitCode.FINDINGS: "fail: new or expired findings",
            ExitCode.NOT_RUN: "could not run",
        }[
            self.exit_code
        ]

    def outcome_counts(self) -> Counter[str]:
        return Counter(result.outcome.value for runs in self.runs for result in runs.results)

    def by_status(self, status: Status) -> list[GateFinding]:
        return [f for f in self.findings if f.status is status]


def _failed_controls(runs: EntryRuns) -> list[FailedControl]:
    failed = []
    for result in runs.results:
        here = [
            FailedControl(runs.entry.name, case.id, case.reason)
            for case in result.cases
            if not case.expectation.clean and case.expectation.tool is result.tool and not case.passed
        ]
        if runs.entry.control and result.outcome.ran and not fired(result) and not here:
            here.append(FailedControl(runs.entry.name, "-", "positive control came back clean: no expected finding"))
        failed += here
    return failed


def _merged(runs: EntryRuns) -> list[tuple[Finding, int, bool]]:
    """(finding, repeats it was seen in, expected) per signature, first occurrence kept, counts summed."""
    merged: dict[str, tuple[Finding, int, bool]] = {}
    for result in runs.results:
        for finding, is_expected in _by_signature(result, runs.entry.control):
            if finding.signature in merged:
                first, seen, was_expected = merged[finding.signature]
                decisive = strongest_confirmation([first, finding])
                first = first.model_copy(
                    update={
                        "count": first.count + finding.count,
                        "confirmation": decisive.confirmation,
                        "confirmation_evidence": decisive.confirmation_evidence,
                    }
                )
                merged[finding.signature] = (first, seen + 1, was_expected and is_expected)
            else:
                version = finding.sanitizer_version or result.sanitizer_version
                merged[finding.signature] = (finding.model_copy(update={"sanitizer_version": version}), 1, is_expected)
    return list(merged.values())


def _by_signature(result: RunResult, control: bool) -> list[tuple[Finding, bool]]:
    """One finding per signature of one run: a batched run reports a defect once per case; counts are summed
    and the cases named together (a signature is expected only if it is expected in every case)."""
    groups: dict[str, list[Finding]] = {}
    for finding in result.findings:
        if not finding.fallout:
            groups.setdefault(finding.signature, []).append(finding)
    merged = []
    for same in groups.values():
        cases = sorted({f.case for f in same if f.case})
        decisive = strongest_confirmation(same)
        finding = same[0].model_copy(
            update={
                "count": sum(f.count for f in same),
                "case": ", ".join(cases) if cases else same[0].case,
                "confirmation": decisive.confirmation,
                "confirmation_evidence": decisive.confirmation_evidence,
            }
        )
        merged.append((finding, all(expected(f, result, control) for f in same)))
    return merged


def judge(suite: Suite, runs: list[EntryRuns], baseline: Baseline | None, today: date | None = None) -> GateReport:
    """The gate's report on `runs` of `suite` against `baseline` (None: every finding is new)."""
    today = today or date.today()
    baseline = baseline or Baseline()
    known = baseline.by_signature()
    report = GateReport(suite, runs)
    seen_signatures: set[str] = set()
    for entry_runs in runs:
        entry = entry_runs.entry
        report.failed_controls += _failed_controls(entry_runs)
        report.not_run += [
            NotRun(entry.name, i, result, entry.case)
            for i, result in enumerate(entry_runs.results)
            if not result.outcome.ran
        ]
        repeats = len(entry_runs.results)
        for finding, seen, is_expected in _merged(entry_runs):
            seen_signatures.add(finding.signature)
            if repeats > 1 or finding.seen is None:  # one repeat keeps the probe's own k/n (e.g. replay's)
                finding = finding.model_copy(
                    update={
                        "seen": f"{seen}/{repeats}",
                        "evidence": Evidence.PROVEN if seen == repeats else Evidence.REPRODUCED,
                    }
                )
            accepted = known.get(finding.signature)
            change = None
            if is_expected:
                status = Status.EXPECTED
            elif finding.severity == "warning" and suite.fail_on_of(entry) == "error":
                status = Status.WARNING
            elif accepted is not None:
                status = Status.EXPIRED if accepted.expired(today) else Status.BASELINED
            else:
                status = Status.NEW
                before = baseline.sanitizers.get(finding.tool.value)
                if before and finding.sanitizer_version and before != finding.sanitizer_version:
                    change = f"from {before} to {finding.sanitizer_version}"
            report.findings.append(GateFinding(entry.name, finding, seen, repeats, status, accepted, change))
    # A baseline entry names the probe and tool that recorded it, not the suite entry: every process of that probe and
    # tool must have run before its absence can mean fixed (one of a suite's tests timing out while another, clean,
    # ran is not a fix of what the first one recorded).
    all_ran: dict[tuple[str, str], bool] = {}
    for r in runs:
        key = (r.entry.probe, r.entry.tool.value)
        all_ran[key] = all_ran.get(key, True) and bool(r.results) and all(res.outcome.ran for res in r.results)
    checked = {key for key, ran in all_ran.items() if ran}
    for accepted in baseline.finding:
        if accepted.signature in seen_signatures:
            continue
        if (accepted.probe, accepted.tool.value if accepted.tool else None) not in checked:
            report.unchecked.append(accepted)
        elif accepted.flaky:
            report.flaky_unseen.append(accepted)
        else:
            report.fixed.append(accepted)
    return report


def updated_baseline(report: GateReport, old: Baseline | None, today: date | None = None) -> Baseline:
    """What --update-baseline writes: every non-control finding (old reasons kept), fixed entries dropped."""
    today = today or date.today()
    old = old or Baseline()
    known = old.by_signature()
    entries: dict[str, BaselineEntry] = {}
    probe_of = {r.entry.name: (r.entry.probe, r.entry.tool) for r in report.runs}
    for item in report.findings:
        if item.status in (Status.EXPECTED, Status.WARNING) or item.finding.signature in entries:
            continue
        finding = item.finding
        kept = known.get(finding.signature)
        probe, tool = probe_of[item.entry]
        entries[finding.signature] = BaselineEntry(
            signature=finding.signature,
            reason=kept.reason if kept else f"recorded by cuprobe gate --update-baseline on {today}; review it",
            expires=kept.expires if kept else None,
            flaky=(kept.flaky if kept else False) or item.seen < item.repeats,
            probe=probe,
            tool=tool,
            kind=finding.kind,
            location=finding.location(),
            sanitizer_version=finding.sanitizer_version,
        )
    for kept in report.flaky_unseen + report.unchecked:
        entries.setdefault(kept.signature, kept)
    sanitizers = dict(old.sanitizers)
    for runs in report.runs:
        for result in runs.results:
            if result.sanitizer_version:
                sanitizers[result.tool.value] = result.sanitizer_version
    return Baseline(sanitizers=sanitizers, finding=sorted(entries.values(), key=lambda e: e.signature))
