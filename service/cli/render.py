"""The one place that renders results and Findings for humans (rich)."""

from __future__ import annotations

import shlex

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from service.models import Finding, Outcome, RunResult

OUTCOME_STYLE = {Outcome.CLEAN: "bold green", Outcome.FINDINGS: "bold yellow"}


def location(finding: Finding) -> str:
    if finding.file:
        return f"{finding.file}:{finding.line}" if finding.line is not None else finding.file
    return f"pc {finding.pc}" if finding.pc else "-"


def findings_table(findings: list[Finding], title: str = "Findings") -> Table:
    table = Table(title=title, show_lines=False)
    for column in (
        "severity",
        "kind",
        "kernel",
        "location",
        "count",
        "hazards",
        "threads",
        "case",
        "flags",
        "confirmed",
    ):
        table.add_column(column, overflow="fold")
    for f in findings:
        threads = ",".join(f"{axis}{lo}-{hi}" for axis, (lo, hi) in f.threads.items() if hi) or "-"
        flags = ",".join(
            n for n, on in (("fallout", f.fallout), ("library", f.library), ("filtered", f.filtered)) if on
        )
        table.add_row(
            f.severity,
            f.kind,
            f.kernel or "-",
            location(f),
            str(f.count),
            "-" if f.hazards is None else str(f.hazards),
            threads,
            f.case or "-",
            flags or "-",
            f.confirmation.value if f.confirmation else "-",
        )
    return table


def print_result(result: RunResult, console: Console) -> None:
    style = OUTCOME_STYLE.get(result.outcome, "bold red")
    console.print(
        f"[{style}]{result.outcome.value}[/]  {result.probe} under {result.tool.value}: {escape(result.message)}"
    )
    facts = [f"records {result.records}"]
    if result.summary_count is not None:
        facts.append(f"summary {result.summary_count}")
    if result.truncated:
        facts.append("TRUNCATED")
    if result.sanitizer_version:
        facts.append(f"compute-sanitizer {result.sanitizer_version}")
    if key := result.options.key():
        facts.append(f"options {key}")
    if warnings := sum(1 for f in result.findings if f.severity == "warning"):
        facts.append(f"{warnings} warning finding(s)")
    facts.append(f"{result.duration_s:.1f} s")
    console.print("  " + " | ".join(facts))
    if result.findings:
        console.print(findings_table(result.findings))
    confirmed = [f for f in result.findings if f.confirmation and f.confirmation_evidence]
    if confirmed:
        counts = result.confirmation_counts()
        console.print("  " + ", ".join(f"{n} {kind}" for kind, n in counts.items() if n))
        for f in confirmed:
            assert f.confirmation_evidence is not None
            console.print(
                f"  {f.confirmation.value if f.confirmation else '-'} {escape(f.case or '-')} "
                f"{escape(location(f))}: {escape(f.confirmation_evidence.reason)}",
                soft_wrap=True,
            )
    for check in result.confirmation_control:
        mark = "[green]ok[/]" if check.get("ok") else "[red]WRONG[/]"
        console.print(
            f"  confirmer control {escape(str(check.get('case')))}: {mark} expected {check.get('expected')}, "
            f"got {', '.join(check.get('got') or []) or 'nothing'}"
        )
    if result.confirmation_s is not None:
        console.print(f"  confirmation: {result.confirmation_s:.1f} s of bare re-runs")
    for case in result.cases:
        mark = "[green]pass[/]" if case.passed else "[red]FAIL[/]"
        console.print(f"  case {escape(case.id)}: {mark} ({case.expectation.describe()}) {escape(case.reason)}")
    if result.command:
        console.print(f"  reproduce: {shlex.join(result.command)}", soft_wrap=True, highlight=False)
