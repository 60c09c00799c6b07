"""A Markdown summary of a sweep and its diff, for a CI job summary or an issue."""

from __future__ import annotations

from cuprobe.service.models import confirmation_counts
from cuprobe.service.models.reasons import by_reason, names_line
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.reports.table import table
from cuprobe.service.sweep.diff import SweepDiff
from cuprobe.service.sweep.notify import culprit

# Distinct reasons listed under "Could not run" before a line counting the rest.
REASONS_SHOWN = 50


# Said where a sweep has no earlier one of its definition to be compared with.
FIRST_SWEEP = "The first sweep of this definition: nothing earlier to compare with, so every finding is new."


def ran_on(sweep: Sweep) -> str:
    """The sanitizer and driver the sweep ran with, said plainly where it ran none (every process bare, no GPU)."""
    sanitizer = f"sanitizer {sweep.sanitizer_version}" if sweep.sanitizer_version else "no sanitizer (bare runs)"
    driver = f"driver {sweep.driver}" if sweep.driver else "no GPU driver"
    return f"{sanitizer}; {driver}"


def changes_lines(diff: SweepDiff) -> list[str]:
    """The diff as Markdown: against which sweep, version changes, each new, fixed, flaky or unverified finding, and
    how many persist (`cuprobe sweep diff` prints it; --json gives the diff itself)."""
    lines = [
        f"## Changes since {diff.previous[:12]}" if diff.previous else "## Changes",
        "",
        *([] if diff.previous else [FIRST_SWEEP, ""]),
        *([f"Versions changed: {diff.version_change}", ""] if diff.version_change else []),
    ]
    for name in ("new", "fixed", "flaky", "unverified"):
        for item in getattr(diff, name):
            lines.append(f"- **{name}** `{item.case}` `{item.signature}` {item.explained}".rstrip())
    lines.append(f"- persisting: {len(diff.persisting)}")
    return [*lines, ""]


def markdown(sweep: Sweep, diff: SweepDiff | None = None) -> str:
    """Counts by outcome, the processes that ran one case each and why, the diff, then every finding."""
    counts = sweep.counts()
    batched = [p for p in sweep.processes if p.batched]
    single = [p for p in sweep.processes if not p.batched]
    unfinished = (
        [f"**This sweep is {sweep.state}, not a result**" + (f": {sweep.message}" if sweep.message else ""), ""]
        if sweep.state != "done"
        else [f"Note: {sweep.message}", ""]  # a finished sweep's message: it was resumed, and how
        if sweep.message
        else []
    )
    source = (
        [f"Repository {sweep.source.url} {sweep.source.branch} at {sweep.source.commit.line()}", ""]
        if sweep.source
        else []
    )
    lines = [
        f"# Sweep {sweep.definition} ({sweep.id[:12]})",
        "",
        *unfinished,
        *source,
        f"{len(sweep.cases)} cases in {len(sweep.processes)} processes ({len(batched)} batched, {len(single)} one "
        f"case each); wall {sweep.wall_s} s; {ran_on(sweep)}",
        "",
        *table(["outcome", "cases"], sorted(counts.items())),
    ]
    dead = [p for p in batched if p.control_fired and not all(p.control_fired)]
    if dead:
        lines += [
            "**Batches whose positive control did not fire (could not run, not clean):** "
            + ", ".join(f"#{p.index}" for p in dead),
            "",
        ]
    reasons: dict[str, int] = {}
    for p in single:
        if p.tool == "none":  # a bare process has no sanitizer records to attribute: one case each says nothing
            continue
        reasons[f"{p.probe}/{p.tool}: {p.reason}"] = reasons.get(f"{p.probe}/{p.tool}: {p.reason}", 0) + 1
    if reasons:
        lines += ["## One process per case", "", *[f"- {r} ({n} process(es))" for r, n in sorted(reasons.items())], ""]
    truncated = [c.key for c in sweep.cases if c.truncated]
    if truncated:
        lines += [f"**Record cap hit; counts are lower bounds or missing for:** {', '.join(truncated)}", ""]
    if diff is not None:
        lines += changes_lines(diff)
    lines += _commits(sweep)
    not_run = [c for c in sweep.cases if not c.outcome.ran]
    if not_run:
        groups = by_reason((f"`{c.key}`", f"{c.outcome} — {c.message}") for c in not_run)
        lines += ["## Could not run", ""]
        lines += [f"- {reason} ({len(keys)} case(s): {names_line(keys)})" for reason, keys in groups[:REASONS_SHOWN]]
        if len(groups) > REASONS_SHOWN:
            rest = sum(len(keys) for _, keys in groups[REASONS_SHOWN:])
            lines.append(
                f"- … and {rest} more case(s) with {len(groups) - REASONS_SHOWN} other reason(s): "
                "the HTML report and `cuprobe sweep show ID --json` list every one"
            )
        lines.append("")
    counts = confirmation_counts([f for case in sweep.cases if not case.control for f in case.findings])
    rows = [
        [
            case.key,
            f"`{f.signature}`",
            f.count,
            f.seen or "",
            f.confirmation.value if f.confirmation else "-",
            f.confirmation_evidence.reason if f.confirmation_evidence else "",
        ]
        for case in sweep.cases
        for f in case.findings
    ]
    confirmed = any(n for kind, n in counts.items() if kind != "not confirmed")
    lines += [
        "## Findings",
        "",
        *(  # none confirmed (bare runs, tools the confirmation does not re-run): the counts would say nothing
            [
                "By confirmation (blind spots of the tool and benign reads are shown, never failing): "
                + ", ".join(f"{n} {kind}" for kind, n in counts.items()),
                "",
            ]
            if confirmed
            else []
        ),
        *table(["case", "signature", "records", "seen", "confirmation", "evidence"], rows),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def _commits(sweep: Sweep) -> list[str]:
    """Each bisect: the finding, the commit it named (or why none), and every commit it tested with what it gave."""
    if not sweep.bisections:
        return []
    lines = ["## Commits", ""]
    for b in sweep.bisections:
        minutes = b.gpu_s / 60
        lines += [
            f"- **{b.direction}** `{b.case}` `{b.signature}`: {culprit(b)}",
            f"  {b.commits} commit(s) after {b.good[:12] or '-'}; {len(b.steps)} step(s), {minutes:.1f} GPU min, "
            f"{b.wall_s:.0f} s",
        ]
        lines += [
            f"  - {s.commit.short} {s.verdict} {s.seen} {s.commit.title}: {s.reason}".rstrip() for s in b.steps
        ]
    return [*lines, ""]
