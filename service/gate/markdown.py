"""The gate's Markdown summary, fit for GitHub's step summary ($GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

from cuprobe.service.gate.verdict import GateReport, Status
from cuprobe.service.models import Confirmation
from cuprobe.service.reports.table import table


def _could_not_run(report: GateReport) -> list[str]:
    problems = [[n.label, n.repeat + 1, n.result.outcome.value, n.result.message] for n in report.not_run]
    problems += [
        [c.entry, "-", "positive control came back clean", f"case {c.case}: {c.reason}"] for c in report.failed_controls
    ]
    out = [f"### Could not run ({len(problems)})", ""]
    return out + (table(["probe", "repeat", "outcome", "why"], problems) if problems else ["None.", ""])


def _nothing_ran(report: GateReport) -> list[str]:
    """The summary of a gate none of whose runs ran: said once, with why each could not."""
    runs = len(report.not_run)
    said = f"**Nothing ran:** {'the run' if runs == 1 else f'all {runs} runs'} could not run, so nothing was checked."
    return [said, "", *_could_not_run(report)]


def render(report: GateReport) -> str:
    """The whole summary: verdict, counts by outcome, new findings, fixed ones, what could not run and why."""
    suite = report.suite
    out = [f"## cuprobe gate: {suite.name} — exit {report.exit_code} ({report.verdict})", ""]
    counts = report.outcome_counts()
    out += ["### Runs by outcome", ""]
    out += table(["outcome", "runs"], [[outcome, n] for outcome, n in sorted(counts.items())])
    if not any(result.outcome.ran for runs in report.runs for result in runs.results):
        return "\n".join(out + _nothing_ran(report)) + "\n"
    out += [f"**Findings:** {report.summary_line()}", ""]
    failing = [f for f in report.findings if f.fails]
    out += [f"### New findings ({len(failing)})", ""]
    if failing:
        out += table(
            ["status", "confirmation", "probe", "kind", "location", "kernel", "seen", "count", "signature"],
            [
                [
                    f.label,
                    f.confirmation,
                    f.entry,
                    f.finding.kind,
                    f.finding.location(),
                    f.finding.kernel or "-",
                    f"{f.seen}/{f.repeats}",
                    f.finding.count,
                    f"`{f.finding.signature}`",
                ]
                for f in failing
            ],
        )
    else:
        out += ["None.", ""]
    for title, kind in (
        ("Blind spots of the tool (shown, never failing)", Confirmation.BLIND_SPOT),
        ("Benign reads: never written, masked out of the result (shown, never failing)", Confirmation.BENIGN),
    ):
        shown = [f for f in report.findings if f.status.fails and f.finding.confirmation is kind]
        out += [f"### {title} ({len(shown)})", ""]
        out += (
            table(
                ["probe", "kind", "location", "kernel", "count", "evidence", "signature"],
                [
                    [
                        f.entry,
                        f.finding.kind,
                        f.finding.location(),
                        f.finding.kernel or "-",
                        f.finding.count,
                        f.finding.confirmation_evidence.reason if f.finding.confirmation_evidence else "-",
                        f"`{f.finding.signature}`",
                    ]
                    for f in shown
                ],
            )
            if shown
            else ["None.", ""]
        )
    out += [f"### Fixed ({len(report.fixed)})", ""]
    out += (
        table(
            ["signature", "location", "reason it was baselined"],
            [[f"`{e.signature}`", e.location or "-", e.reason] for e in report.fixed],
        )
        if report.fixed
        else ["None.", ""]
    )
    out += _could_not_run(report)
    known = report.by_status(Status.BASELINED)
    if known:
        out += [f"### Baselined ({len(known)})", ""]
        out += table(
            ["status", "location", "seen", "reason", "expires", "signature"],
            [
                [
                    f.label,
                    f.finding.location(),
                    f"{f.seen}/{f.repeats}",
                    f.baseline.reason if f.baseline else "-",
                    f.baseline.expires if f.baseline and f.baseline.expires else "-",
                    f"`{f.finding.signature}`",
                ]
                for f in known
            ],
        )
    warnings = report.by_status(Status.WARNING)
    if warnings:
        out += [f"### Warnings, not failing ({len(warnings)})", ""]
        out += table(
            ["entry", "case", "kind", "location", "seen", "count"],
            [
                [f.entry, f.finding.case or "-", f.finding.kind, f.finding.location(), f"{f.seen}/{f.repeats}",
                 f.finding.count]
                for f in warnings
            ],
        )
    if report.flaky_unseen or report.unchecked:
        out += ["### Baseline entries not seen", ""]
        out += table(
            ["signature", "why not reported fixed"],
            [[f"`{e.signature}`", "marked flaky: absence proves nothing"] for e in report.flaky_unseen]
            + [[f"`{e.signature}`", "its probe and tool did not run cleanly in this suite"] for e in report.unchecked],
        )
    controls = report.by_status(Status.EXPECTED)
    out += [f"### Positive controls fired ({len(controls)})", ""]
    out += (
        table(
            ["probe", "kind", "location", "seen", "count"],
            [
                [f.entry, f.finding.kind, f.finding.location(), f"{f.seen}/{f.repeats}", f.finding.count]
                for f in controls
            ],
        )
        if controls
        else ["None.", ""]
    )
    return "\n".join(out) + "\n"
