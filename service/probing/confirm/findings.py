"""confirm_findings: each initcheck finding of a run decided from its bare re-runs, the confirmer's control checked."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cuprobe.contract import Tool, is_confirm_control
from cuprobe.probes import registry
from cuprobe.probes.base import Probe
from cuprobe.probes.confirm_control import CASES as CONTROL_CASES
from cuprobe.probes.kinds import HOST_API_UNINITIALIZED
from cuprobe.service.config import Settings
from cuprobe.service.models import Confirmation, ConfirmationEvidence, Finding, ProbeRequest, RunResult
from cuprobe.service.probing.confirm.decide import BareRun, decide
from cuprobe.service.probing.confirm.policy import (
    HOST_API_REASON,
    NOT_PLANTED,
    blind_spot_planted,
    narrowed_params,
    poison_refusal,
    user_filters,
)
from cuprobe.service.probing.confirm.reruns import LATE_DIR, EarlyReruns, Reruns
from cuprobe.service.sanitizer.flagged import FlaggedMemory
from cuprobe.service.sanitizer.parse import ParseResult

Flagged = dict[tuple[str, str | None], FlaggedMemory]  # (signature, case) -> the memory its records flagged


def confirmation_summary(findings: list[Finding]) -> str:
    """`confirmed: 1 consequential, 2 benign, 0 blind-spot, 0 unconfirmed` over initcheck findings."""
    counts = {c: 0 for c in Confirmation}
    for finding in findings:
        if finding.confirmation is not None and not finding.fallout:
            counts[finding.confirmation] += 1
    return "confirmed: " + ", ".join(f"{n} {c.value}" for c, n in counts.items())


def not_rerun(plan: dict[str, list[str]], runs: dict[str, BareRun]) -> set[str]:
    """The flagged cases (`plan`'s) that completed re-runs did not run: those the early re-runs were not asked for
    (early_params). Empty where a re-run failed: its findings are unconfirmed with its reason."""
    if not runs or not all(run.ok for run in runs.values()):
        return set()
    ran = set.intersection(*(run.cases for run in runs.values()))
    return {case for case in plan if case not in ran}


def missing_snapshots(plan: dict[str, list[str]], sentinel: BareRun) -> list[tuple[str, str]]:
    """(case, buffer) pairs the findings need and the sentinel run did not snapshot."""
    return [
        (case, name) for case, names in plan.items() for name in names if name not in sentinel.snapshots.get(case, {})
    ]


def _unconfirmed(finding: Finding, reason: str) -> Finding:
    return finding.model_copy(
        update={"confirmation": Confirmation.UNCONFIRMED, "confirmation_evidence": ConfirmationEvidence(reason=reason)}
    )


@dataclass
class Sorted:
    """A run's findings sorted for the confirmation: the confirmer's control apart from the user's findings, and
    which of those are to be decided (`targets`: indexes into `findings`)."""

    control: list[Finding]
    findings: list[Finding]
    targets: list[int]


def sort_findings(result: RunResult) -> Sorted:
    """The control's findings set apart; the initcheck findings to decide, those a host API call read left
    unconfirmed (the re-runs cannot see that read)."""
    control = [f for f in result.findings if is_confirm_control(f.case)]
    findings = [f for f in result.findings if not is_confirm_control(f.case)]
    targets = [i for i, f in enumerate(findings) if f.tool is Tool.INITCHECK and f.kind != "expectation-violation"]
    for i in [i for i in targets if findings[i].kind == HOST_API_UNINITIALIZED]:
        findings[i] = _unconfirmed(findings[i], HOST_API_REASON)
    return Sorted(control, findings, [i for i in targets if findings[i].kind != HOST_API_UNINITIALIZED])


def watch_plan(findings: list[Finding], flagged: Flagged) -> dict[str, list[str]]:
    """Case id -> the buffers the sentinel run must read back: those the findings' records flagged."""
    watch: dict[str, set[str]] = {}
    for finding in findings:
        memory = flagged.get((finding.signature, finding.case))
        if finding.case and memory:
            watch.setdefault(finding.case, set()).update(memory.ranges)
    return {case: sorted(names) for case, names in watch.items()}


@dataclass
class Gathered:
    """The re-runs a run's findings are decided from: `runs` (early or after the run), `later` for the flagged
    cases the early ones left out (`left_out`), their wall time together, and what the message adds about them."""

    runs: dict[str, BareRun]
    spent_s: float
    later: dict[str, BareRun] = field(default_factory=dict)
    left_out: set[str] = field(default_factory=set)
    note: str = ""

    def for_case(self, case: str | None) -> dict[str, BareRun]:
        return self.later if case in self.left_out else self.runs


def _after_early(
    early: EarlyReruns, plan: dict[str, list[str]], result: RunResult, request: ProbeRequest, settings: Settings,
    workdir: Path, sandboxed: bool,
) -> Gathered:  # fmt: skip
    """The early re-runs' results, with re-runs after the run for the flagged cases they did not run, and the
    sentinel run again where it left a flagged buffer out (past its byte cap)."""
    gathered = Gathered(early.results(), early.spent_s)
    gathered.left_out = not_rerun(plan, gathered.runs)
    if gathered.left_out:
        own = {case for case in gathered.left_out if not is_confirm_control(case)}
        probe: Probe[Any] = registry.get(request.probe)
        params = narrowed_params(probe, result.params, own) or result.params
        watch = {c: plan[c] for c in gathered.left_out}
        late = Reruns(request, params, watch, settings, workdir, folder=LATE_DIR, sandboxed=sandboxed)
        gathered.later, gathered.spent_s = late.results(), round(gathered.spent_s + late.spent_s, 3)
        gathered.note = f", and after it for the {len(gathered.left_out)} flagged case(s) they did not run"
        failed_late = [run for run in gathered.later.values() if not run.ok]
        if failed_late:
            gathered.note += f" (which could not run: {failed_late[0].message})"
    kept = {case: names for case, names in plan.items() if case not in gathered.left_out}
    if gathered.runs["sentinel"].ok and missing_snapshots(kept, gathered.runs["sentinel"]):
        again = Reruns(
            request, result.params, kept, settings, workdir, runs=(("sentinel", "sentinel"),), sandboxed=sandboxed
        )
        gathered.runs["sentinel"] = again.results()["sentinel"]
        gathered.spent_s = round(gathered.spent_s + again.spent_s, 3)
    return gathered


def gather_reruns(
    early: EarlyReruns | None, plan: dict[str, list[str]], result: RunResult, request: ProbeRequest,
    settings: Settings, workdir: Path, sandboxed: bool = False,
) -> Gathered:  # fmt: skip
    """The re-runs to decide from: the early ones (and what they left), else four started now for the plan.
    `sandboxed`: the run was (a job's own code), so its re-runs are too."""
    if early is not None:
        return _after_early(early, plan, result, request, settings, workdir, sandboxed)
    late = Reruns(request, result.params, plan, settings, workdir, sandboxed=sandboxed)
    return Gathered(late.results(), late.spent_s)


@dataclass
class ControlCheck:
    """One of the confirmer's planted cases: what it must come out as, what it came out as, and whether that held."""

    case: str
    what: str
    expected: str
    got: list[str]
    ok: bool
    reason: str


def check_control(decided: list[Finding], planted: bool) -> list[ControlCheck]:
    """Each planted case's check from its decided findings (`planted`: whether the blind-spot control's write was
    hidden from initcheck in this run; where it was not, that case must come out with no finding)."""
    checks = []
    for case_id, (expected, what) in CONTROL_CASES.items():
        mine = [f for f in decided if f.case == case_id]
        got = sorted({f.confirmation.value for f in mine if f.confirmation})
        reason = "; ".join(f.confirmation_evidence.reason for f in mine if f.confirmation_evidence)
        ok = got == [expected]
        if expected == Confirmation.BLIND_SPOT.value and not planted:
            expected, what, ok = "no finding", f"{what} (seen: {NOT_PLANTED})", not mine
        checks.append(ControlCheck(case_id, what, expected, got, ok, reason))
    return checks


def _done_note(gathered: Gathered, early: EarlyReruns | None) -> str:
    """How the re-runs ran, for the message: beside the run, shared, in ready processes, and what came after."""
    when = ", started beside the sanitizer run" if early is not None else ""
    if early is not None and early.shared_by > 1:
        when += f", one set for the sweep's {early.shared_by} processes of this grid{early.where}"
    if warm := sum(1 for run in gathered.runs.values() if run.warm):
        when += f", {warm} of them in processes ready before it"
    return f"({gathered.spent_s:g} s of bare re-runs{when}{gathered.note})"


def confirm_findings(
    result: RunResult,
    parsed: ParseResult | None,
    request: ProbeRequest,
    settings: Settings,
    workdir: Path,
    early: EarlyReruns | None = None,
    sandboxed: bool = False,
) -> RunResult:
    """`result` with each initcheck finding confirmed and the confirmer's control checked (then set aside): its
    checks in `confirmation_control`, for the classifier (control_verdict) to judge. `early`: the re-runs started
    beside the sanitizer run (start_early); the caller closes them. `sandboxed`: the run was, so its re-runs are."""
    split = sort_findings(result)
    findings, targets = split.findings, split.targets
    update: dict[str, object] = {
        "findings": findings,
        "cases": [c for c in result.cases if not is_confirm_control(c.id)],
        "control_records": sum(f.count for f in split.control),
    }
    enabled = request.confirm if request.confirm is not None else settings.confirm
    if not targets or not result.outcome.ran or not enabled:
        return result.model_copy(update=update)
    if (why_not := poison_refusal(request)) is not None:
        reason = f"{why_not} (cuprobe does not control the memory of probe {registry.get(request.probe).name})"
        for i in targets:
            findings[i] = _unconfirmed(findings[i], reason)
        return result.model_copy(update={**update, "message": f"{result.message}; {confirmation_summary(findings)}"})
    flagged: Flagged = parsed.flagged if parsed else {}
    plan = watch_plan([findings[i] for i in targets] + split.control, flagged)
    gathered = gather_reruns(early, plan, result, request, settings, workdir, sandboxed)

    def decided(finding: Finding) -> Finding:
        verdict, evidence = decide(
            finding, flagged.get((finding.signature, finding.case)), gathered.for_case(finding.case)
        )
        evidence.bare_runs_s = gathered.spent_s
        return finding.model_copy(update={"confirmation": verdict, "confirmation_evidence": evidence})

    for i in targets:
        findings[i] = decided(findings[i])
    failed = [run for run in gathered.runs.values() if not run.ok]
    if failed:  # nothing was confirmed (every finding says why), so there is no verdict for a control to check
        note = f"{confirmation_summary(findings)}: the bare re-runs could not run ({failed[0].message})"
        return result.model_copy(
            update={**update, "confirmation_s": gathered.spent_s, "message": f"{result.message}; {note}"}
        )
    planted = blind_spot_planted(result.sanitizer_version, user_filters(request))
    if not planted:
        for i in targets:
            if findings[i].confirmation is Confirmation.BLIND_SPOT:
                findings[i] = _unconfirmed(
                    findings[i], f"decided blind-spot, but no control proves it here: {NOT_PLANTED}"
                )
    checks = check_control([decided(f) for f in split.control if f.tool is Tool.INITCHECK], planted)
    update.update(confirmation_s=gathered.spent_s, confirmation_control=[asdict(c) for c in checks])
    if all(c.ok for c in checks):
        update["message"] = f"{result.message}; {confirmation_summary(findings)} {_done_note(gathered, early)}"
    return result.model_copy(update=update)
