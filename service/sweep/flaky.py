"""Merge a case's repeats: findings seen in k of n repeats carry k/n; disagreeing repeats make the case flaky."""

from __future__ import annotations

from cuprobe.service.models import Evidence, Finding, Outcome, strongest_confirmation
from cuprobe.service.models.sweep import CaseRepeat


def merge_findings(repeats: list[CaseRepeat]) -> list[Finding]:
    """One Finding per signature: the largest count seen, and `seen` k/n over the repeats that ran."""
    ran = [r for r in repeats if r.outcome.ran]
    by_signature: dict[str, list[Finding]] = {}
    for repeat in ran:
        for finding in repeat.findings:
            by_signature.setdefault(finding.signature, []).append(finding)
    merged = []
    for seen in by_signature.values():
        k = sum(any(f.signature == seen[0].signature for f in r.findings) for r in ran)
        n = len(ran)
        biggest = max(seen, key=lambda f: f.count)
        decisive = strongest_confirmation(seen)
        update: dict[str, object] = {
            "count": biggest.count,
            "confirmation": decisive.confirmation,
            "confirmation_evidence": decisive.confirmation_evidence,
        }
        if n > 1:
            update["seen"] = f"{k}/{n}"
            update["evidence"] = Evidence.PROVEN if k == n else Evidence.REPRODUCED
        merged.append(biggest.model_copy(update=update))
    return sorted(merged, key=lambda f: f.signature)


def merge_outcome(repeats: list[CaseRepeat]) -> tuple[Outcome, bool, str]:
    """The case's outcome, whether it is flaky, and a message; a repeat that could not run wins."""
    outcomes = [r.outcome for r in repeats]
    flaky = len(set(outcomes)) > 1 or _signature_sets_differ(repeats)
    failed = next((r for r in repeats if not r.outcome.ran), None)
    if failed is not None:
        return failed.outcome, flaky, failed.message
    outcome = Outcome.FINDINGS if Outcome.FINDINGS in outcomes else Outcome.CLEAN
    message = repeats[0].message
    if flaky:
        message = f"flaky: outcomes over {len(repeats)} repeats were {', '.join(o.value for o in outcomes)}"
    return outcome, flaky, message


def _signature_sets_differ(repeats: list[CaseRepeat]) -> bool:
    sets = {frozenset(f.signature for f in r.findings if not f.fallout) for r in repeats if r.outcome.ran}
    return len(sets) > 1
