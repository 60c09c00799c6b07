"""Split one process's RunResult into per-case results: by allocation map when batched, whole when not."""

from __future__ import annotations

from cuprobe.service.models import Outcome, RunResult
from cuprobe.service.models.sweep import CaseRepeat
from cuprobe.service.sweep.plan import PlannedCase, Process


def control_fired(process: Process, result: RunResult) -> bool:
    """True when the batch's own positive control case ran and saw what it must see."""
    verdict = next((v for v in result.cases if v.id == process.control), None)
    return verdict is not None and not verdict.expectation.clean and verdict.passed and verdict.findings > 0


def attribute(process: Process, result: RunResult) -> dict[str, CaseRepeat]:
    """Each planned case's outcome and findings in this one run of `process`."""
    if not result.outcome.ran:
        why = f"could not run ({result.outcome}): {result.message}"
        return {c.key: CaseRepeat(outcome=result.outcome, message=why) for c in process.cases}
    if not process.batched:
        case = process.cases[0]
        return {
            case.key: CaseRepeat(
                outcome=result.outcome,
                message=result.message,
                findings=list(result.findings),
                observations={v.id: v.observations for v in result.cases},
                truncated=result.truncated,
            )
        }
    if not control_fired(process, result):
        why = (
            f"the batch's positive control {process.control} did not fire: the instrument is broken, so no case "
            f"in this process can be called clean ({result.message})"
        )
        return {c.key: CaseRepeat(outcome=Outcome.SANITIZER_ERROR, message=why) for c in process.cases}
    order = [v.id for v in result.cases]
    cut: int | None = None
    if result.truncated:
        # Records arrive in the order cases ran: those before the last kept record's case are complete.
        cut = order.index(result.truncated_at_case) if result.truncated_at_case in order else 0
    return {c.key: _one(c, result, order, cut) for c in process.cases}


def _one(case: PlannedCase, result: RunResult, order: list[str], cut: int | None) -> CaseRepeat:
    if case.probe_case not in order:
        return CaseRepeat(outcome=Outcome.PROBE_ERROR, message=f"the probe did not report case {case.probe_case}")
    mine = [f for f in result.findings if f.case == case.probe_case]
    real = [f for f in mine if not f.fallout]
    truncated = cut is not None and order.index(case.probe_case) >= cut
    if truncated and not real:
        return CaseRepeat(
            outcome=Outcome.SANITIZER_ERROR,
            message="the process hit its record cap before this case: not counted, not clean",
            truncated=True,
        )
    seen = {str(case.probe_case): next(v.observations for v in result.cases if v.id == case.probe_case)}
    if real:
        partial = " (a lower bound: the record cap was hit here)" if truncated else ""
        message = f"{len(real)} finding(s), {sum(f.count for f in real)} record(s){partial}"
        return CaseRepeat(
            outcome=Outcome.FINDINGS, message=message, findings=mine, truncated=truncated, observations=seen
        )
    return CaseRepeat(
        outcome=Outcome.CLEAN, message="no records attributed to this case", findings=mine, observations=seen
    )


def unattributed(result: RunResult) -> list[str]:
    """Signatures of findings in a batched run that no case's allocations hold."""
    return sorted({f.signature for f in result.findings if f.case is None and not f.fallout})
