"""The one place that renders results and Findings for humans (rich)."""

from __future__ import annotations

import json
import re
import shlex
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from rich.box import SIMPLE_HEAD
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cuprobe.service.models import Finding, Outcome, RunResult
from cuprobe.service.models.problems import SpellingDeprecated
from cuprobe.service.sanitizer.classify import PAST_THE_CAP

# Observation keys that say what a case measured: shown under the case, not only in --json.
MEASURED = ("class", "verdict")
OUTCOME_STYLE = {Outcome.CLEAN: "bold green", Outcome.FINDINGS: "bold yellow"}


# "Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to cudaFree."
_API_ERROR = re.compile(
    r'hit (?P<error>\w+)(?: \(error \d+\))?(?: due to "(?P<why>[^"]*)")? on CUDA API call to (?P<call>\w+)'
)


def what(finding: Finding) -> str:
    """The record's own words, short: for an API error, the call and the error it returned."""
    if match := _API_ERROR.search(finding.message):
        why = f" ({match['why']})" if match["why"] else ""
        return f"{match['call']}: {match['error']}{why}"
    return finding.message


def where(finding: Finding) -> str:
    """Kernel and source line; for a host-side record (API error, leak), the API call it was made in."""
    if finding.kernel or finding.file or finding.pc:
        loc = finding.location()
        return f"{finding.kernel} {loc}" if finding.kernel and loc not in ("-", finding.kernel) else loc
    frames = [f.split(" (")[0] for f in finding.host_frames if not f.startswith("?")]
    return frames[0] if frames else "-"


def _details(finding: Finding) -> str:
    """Where, what, then the case, threads and flags: one cell that wraps, so 80 columns stay readable."""
    threads = ",".join(f"{axis}{lo}-{hi}" for axis, (lo, hi) in finding.threads.items() if hi)
    marks = (("fallout", finding.fallout), ("library", finding.library), ("filtered", finding.filtered))
    flags = [name for name, on in marks if on]
    extra = [*([f"case {finding.case}"] if finding.case else []), *([f"threads {threads}"] if threads else []), *flags]
    if finding.confirmation:
        extra.append(f"confirmation {finding.confirmation.value}")
    said, at = what(finding), where(finding)
    lines = [at if not said.startswith(f"{at}:") else "", said, " · ".join(extra)]
    return "\n".join(line for line in lines if line and line != "-")


def word_table(title: str | None, *columns: str, lines: bool = True) -> Table:
    """A table that fits 80 columns without breaking a word: no outer edge, one space between the columns, a blank
    line between the rows (`lines`); a word longer than its column is folded."""
    table = Table(title=title, box=SIMPLE_HEAD, show_edge=False, padding=0, show_lines=lines)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def findings_table(findings: list[Finding], title: str = "Findings") -> Table:
    """One row per Finding: kind (never split), count, hazards where the tool counts them, and the details.

    Severity gets a column when any finding is a warning (errors are what a table otherwise holds)."""
    severity = any(f.severity != "error" for f in findings)
    hazards = any(f.hazards is not None for f in findings)
    table = Table(title=title, show_lines=len(findings) > 1)
    if severity:
        table.add_column("severity", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("count", justify="right", no_wrap=True)
    if hazards:
        table.add_column("hazards", justify="right", no_wrap=True)
    table.add_column("where / what", overflow="fold", ratio=1)
    for f in findings:
        cells = [
            *([f.severity] if severity else []),
            f.kind,
            str(f.count),
            *([str(f.hazards) if f.hazards is not None else "-"] if hazards else []),
        ]
        table.add_row(*(escape(c) for c in [*cells, _details(f)]))
    return table


def print_result(result: RunResult, console: Console) -> None:
    style = OUTCOME_STYLE.get(result.outcome, "bold red")
    console.print(
        f"[{style}]{result.outcome.value}[/]  {result.probe} under {result.tool.value}: {escape(result.message)}"
    )
    facts = [f"records {result.records}"]
    if result.control_records:
        facts[0] += f" ({result.control_records} of them the confirmer's planted control)"
    if result.summary_count is not None:
        facts.append(f"summary {result.summary_count}")
    if result.truncated:
        facts.append("TRUNCATED")
    if result.sanitizer_version:
        facts.append(f"compute-sanitizer {result.sanitizer_version}")
    if key := result.options.key():
        facts.append(f"options {key}")
    if warned := sum(1 for f in result.findings if f.severity == "warning"):
        facts.append(f"{warned} warning finding(s)")
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
                f"{escape(f.location())}: {escape(f.confirmation_evidence.reason)}",
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
        mark = (
            "[yellow]not judged[/]"
            if case.reason == PAST_THE_CAP
            else "[green]pass[/]"
            if case.passed
            else "[red]FAIL[/]"
        )
        console.print(f"  case {escape(case.id)}: {mark} ({case.expectation.describe()}) {escape(case.reason)}")
        if measured := _measured(case.observations):
            console.print(f"    {escape(measured)}")
    if result.command:
        console.print(f"  reproduce: {shlex.join(result.command)}", soft_wrap=True, highlight=False)


def _measured(observations: dict[str, Any]) -> str:
    """What a case measured, in its probe's words (bf16-matmul's class, gradcheck's verdict) with the evidence and
    reasons it gives; empty for a probe that names none."""
    said = [f"{key} {observations[key]}" for key in MEASURED if isinstance(observations.get(key), str)]
    if not said:
        return ""
    evidence, reasons = observations.get("evidence"), observations.get("reasons") or []
    details = [*([f"evidence {evidence}"] if evidence else []), *(str(r) for r in reasons)]
    return ", ".join(said) + (f" ({'; '.join(details)})" if details else "")


@contextmanager
def spelling_warnings(console: Console) -> Iterator[None]:
    """Say each deprecated spelling a suite or sweep file used, once, as a one-line warning on `console`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpellingDeprecated)
        yield
    for warning in caught:
        if issubclass(warning.category, SpellingDeprecated):
            console.print(f"[yellow]warning:[/] {escape(str(warning.message))}", soft_wrap=True)


def _type_name(annotation: Any) -> str:
    """A parameter's type as a user writes it: `int`, `list[int]`, `float | None`."""
    if get_origin(annotation) is Literal:
        return "choice"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "choice"
    text = getattr(annotation, "__name__", None) if not get_args(annotation) else None
    return text or re.sub(r"Literal\[[^\]]*\]", "choice", str(annotation).replace("typing.", ""))


def _allowed(annotation: Any, field: FieldInfo) -> str:
    """The values or bounds a parameter accepts: Literal/Enum choices (also inside a list), ge/le bounds."""
    for candidate in (annotation, *get_args(annotation)):
        if get_origin(candidate) is Literal:
            return ", ".join(str(v) for v in get_args(candidate))
        if isinstance(candidate, type) and issubclass(candidate, Enum):
            return ", ".join(str(m.value) for m in candidate)
    bounds = []
    for meta in field.metadata:
        for key, sign in (
            ("ge", ">="),
            ("gt", ">"),
            ("le", "<="),
            ("lt", "<"),
            ("min_length", "length >="),
            ("max_length", "length <="),
        ):
            if (value := getattr(meta, key, None)) is not None:
                bounds.append(f"{sign} {value}")
    return ", ".join(bounds) or "-"


def parameter_rows(params: type[BaseModel]) -> list[tuple[str, str, str, str, str]]:
    """(name, type, default, allowed values, description) of each field of a probe's parameter model."""
    rows = []
    for name, field in params.model_fields.items():
        default = "(required)" if field.is_required() else json.dumps(field.get_default(call_default_factory=True))
        rows.append(
            (name, _type_name(field.annotation), default, _allowed(field.annotation, field), field.description or "")
        )
    return rows
