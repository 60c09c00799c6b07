"""The one place that decides a run's Outcome, exactly as docs/outcomes.md's table says."""

from __future__ import annotations

import signal as signals
from dataclasses import dataclass, field
from typing import Any

from cuprobe.contract import EXIT_UNAVAILABLE, CaseResult, ProbeResult, Tool, is_confirm_control
from cuprobe.service.models import CaseVerdict, Finding, Outcome
from cuprobe.service.sanitizer.launches import Launches, nothing_checked, unchecked_note, unfired_controls
from cuprobe.service.sanitizer.parse import ParseResult
from cuprobe.service.sanitizer.summary import SanitizerSummary


@dataclass
class RunEvidence:
    """Everything observed about one run, from which its outcome follows."""

    tool: Tool
    returncode: int | None
    timed_out: bool = False
    timeout_s: float | None = None
    # The watchdog stopped it: seconds without progress, and what had last started (the heartbeat's line).
    stalled_s: float | None = None
    last_beat: str = ""
    xml_capped: bool = False
    cancelled: bool = False
    summary: SanitizerSummary | None = None
    parsed: ParseResult | None = None
    probe: ProbeResult | None = None
    probe_unreadable: str | None = None
    error_exitcode: int = 86
    stderr_tail: str = ""
    # False for saved output (`cuprobe parse`): no probe ran here, so there is no result.json to ask for.
    probe_expected: bool = True
    # The launch dump of a run whose filters choose the launches checked, and those filters as `--flag value`.
    launches: Launches | None = None
    filters: list[str] = field(default_factory=list)


@dataclass
class Classification:
    outcome: Outcome
    message: str
    cases: list[CaseVerdict] = field(default_factory=list)
    signal: int | None = None


def control_verdict(checks: list[dict[str, Any]]) -> Classification | None:
    """`sanitizer_error` where one of the confirmer's planted cases came out wrong (its `confirmation_control`
    checks): the instrument is broken, so no confirmation of the run can be trusted. None where all held."""
    wrong = [c for c in checks if not c["ok"]]
    if not wrong:
        return None
    said = "; ".join(
        f"{c['case']} expected {c['expected']}, got {', '.join(c['got']) or 'no finding'} ({c['reason']})"
        for c in wrong
    )
    return Classification(
        Outcome.SANITIZER_ERROR,
        f"the confirmer's control came out wrong, so no confirmation of this run can be trusted: {said}",
    )


def _signal_name(number: int) -> str:
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def _fatal_signal(ev: RunEvidence) -> int | None:
    """The signal that killed the probe (bare: negative returncode; sanitizer: it says so, exits with it)."""
    if ev.returncode is not None and ev.returncode < 0:
        return -ev.returncode
    if ev.summary and ev.summary.process_failed and ev.returncode and 0 < ev.returncode < 64:
        return ev.returncode
    return None


def _program_signal(probe: ProbeResult) -> tuple[str, int] | None:
    """(case, signal) of the first case whose program was killed by a signal (its `exit_code` is negative)."""
    for case in probe.cases:
        code = case.observations.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool) and code < 0:
            return case.id, -code
    return None


PAST_THE_CAP = (
    "not judged: the record cap was reached before this case ran, so its records were counted but not kept"
)


def case_verdicts(
    cases: list[CaseResult], findings: list[Finding], tool: Tool, capped_at: str | None = None
) -> list[CaseVerdict]:
    """Match each case's expectation with the findings attributed to it (all of them when only one case).

    `capped_at`: the case of the last record kept before the record cap. Records come in the order cases ran, so a
    later case without a finding is unknown, not clean and not a silent positive control: it is not judged."""
    verdicts = []
    order = [c.id for c in cases]
    cut = order.index(capped_at) if capped_at in order else None
    for index, case in enumerate(cases):
        mine = [f for f in findings if f.case == case.id or (len(cases) == 1 and f.case is None)]
        real = [f for f in mine if not f.fallout]
        exp = case.expectation
        if cut is not None and index > cut and not real and not is_confirm_control(case.id):
            passed, reason = not exp.clean, PAST_THE_CAP
        elif exp.clean:
            passed = not real and not case.problems()
            reason = (
                "clean as expected"
                if passed
                else (f"{len(real)} finding(s), {len(case.problems())} violation(s) where clean was expected")
            )
        elif exp.tool is not tool:
            passed, reason = True, f"positive control for {exp.tool}, not checked under {tool}"
        else:
            hits = [f for f in real if f.kind == exp.kind]
            passed = bool(hits)
            reason = (
                f"control fired: {sum(f.count for f in hits)} {exp.kind} record(s)"
                if passed
                else (
                    f"positive control came back clean: expected {exp.tool} {exp.kind}, got "
                    f"{', '.join(sorted({f.kind for f in real})) or 'nothing'}"
                    + (" (if the expected kind is misspelt, use one of these)" if real else "")
                )
            )
        verdicts.append(
            CaseVerdict(
                id=case.id,
                expectation=exp,
                findings=len(real),
                passed=passed,
                reason=reason,
                observations=case.observations,
            )
        )
    return verdicts


def _stopped_by_cuprobe(ev: RunEvidence, records: int) -> Classification:
    """cuprobe's own stop (byte cap, cancel) killed the run: never clean, never crashed; what was seen is kept."""
    why = "its XML outgrew the byte cap (CUPROBE_MAX_XML_BYTES)" if ev.xml_capped else "the job was cancelled"
    stopped = (
        f"cuprobe stopped the run because {why}; the probe and every process it started were killed by cuprobe's "
        "signal, not a crash"
    )
    if records:
        findings = (
            [f for f in ev.parsed.findings if not f.fallout and not is_confirm_control(f.case)] if ev.parsed else []
        )
        verdicts = case_verdicts(ev.probe.cases if ev.probe else [], findings, ev.tool)
        return Classification(
            Outcome.FINDINGS,
            f"{len(findings)} finding(s) from {records} record(s) read before the stop (truncated: later records "
            f"were not seen); {stopped}",
            verdicts,
        )
    outcome = Outcome.CANCELLED if ev.cancelled else Outcome.SANITIZER_ERROR
    return Classification(outcome, f"{stopped}; no sanitizer record was read before the stop, so it is not clean")


def classify(ev: RunEvidence) -> Classification:
    """Decide the outcome; every non-clean outcome carries a message saying what happened."""
    records = ev.parsed.records if ev.parsed else 0
    kept = f" ({records} sanitizer record(s) seen before the end are kept)" if records else ""
    if ev.stalled_s is not None:
        started = f" (the last thing started: {ev.last_beat})" if ev.last_beat else ""
        return Classification(
            Outcome.TIMEOUT,
            f"stalled: no progress for {ev.stalled_s:.0f} s{started} — no new case, sanitizer record or output; the "
            f"whole process group was killed{kept}",
        )
    if ev.timed_out:
        return Classification(
            Outcome.TIMEOUT,
            f"wall-clock limit of {ev.timeout_s:g} s hit; the whole process group was killed{kept}",
        )
    if ev.xml_capped or ev.cancelled:
        return _stopped_by_cuprobe(ev, records)
    if (sig := _fatal_signal(ev)) is not None:
        return Classification(Outcome.CRASHED, f"the probe was killed by {_signal_name(sig)} ({sig}){kept}", signal=sig)
    probe = ev.probe
    if probe and probe.unavailable:
        return Classification(Outcome.UNAVAILABLE, probe.unavailable)
    if probe and not probe.complete and any(c.observations.get("timed_out") is True for c in probe.cases):
        # The probe's own limit on a program it ran (the command probe's timeout_s): that program timed out.
        said = _last_line(probe.error) if probe.error else "the program exceeded its wall-clock limit"
        return Classification(Outcome.TIMEOUT, f"{said.removeprefix('RuntimeError: ')}{kept}")
    if probe and (killed := _program_signal(probe)) is not None:
        # A program the probe ran (the command probe's) was killed by a signal: not an exit status any expectation
        # accepts, whatever expect_exit says.
        case_id, sig = killed
        said = f"the program of case {case_id} was killed by {_signal_name(sig)} ({sig}){kept}"
        return Classification(Outcome.CRASHED, said, signal=sig)
    if ev.returncode == EXIT_UNAVAILABLE and ev.tool is Tool.NONE:
        return Classification(Outcome.UNAVAILABLE, _last_line(ev.stderr_tail) or "the probe reported unavailable")
    sanitized = ev.tool is not Tool.NONE
    summary = ev.summary or SanitizerSummary()
    if sanitized and summary.missing_program:
        return Classification(
            Outcome.PROBE_ERROR,
            "compute-sanitizer says the program does not exist or is not a valid executable",
        )
    if sanitized and summary.not_cuda:
        why = f"; the probe said: {_last_line(probe.error)}" if probe and probe.error else ""
        return Classification(
            Outcome.SANITIZER_ERROR,
            "the program ended before its first CUDA call "
            f'("terminated before first instrumented API call"): nothing was checked{why}',
        )
    if sanitized and summary.internal_error:
        return Classification(Outcome.SANITIZER_ERROR, f"compute-sanitizer failed: {summary.internal_error}")
    parsed = ev.parsed
    if sanitized and parsed and parsed.hostile:
        return Classification(Outcome.SANITIZER_ERROR, f"sanitizer XML refused: {parsed.error}")
    if sanitized and parsed and parsed.error:
        return Classification(Outcome.SANITIZER_ERROR, f"sanitizer XML unreadable: {parsed.error}")
    if sanitized and summary.disagreeing:
        return Classification(Outcome.SANITIZER_ERROR, disagreeing_summaries(summary))
    if sanitized and not summary.present:
        return Classification(
            Outcome.SANITIZER_ERROR,
            "compute-sanitizer printed no ERROR SUMMARY line: the "
            "run cannot be called clean"
            + (f"; last output: {_last_line(ev.stderr_tail)}" if ev.stderr_tail.strip() else ""),
        )
    # Before any probe check: records the summary counts but the XML lacks are never read as clean.
    if (
        sanitized
        and summary.present
        and summary.errors is not None
        and records < summary.errors
        and not (parsed and parsed.truncated)
    ):
        return Classification(
            Outcome.SANITIZER_ERROR,
            f"the summary counts {summary.errors} errors but the XML held {records}: records were lost",
        )
    findings = parsed.findings if parsed else []
    counted = summary.errors or 0
    kept_real = any(not f.fallout and not is_confirm_control(f.case) for f in findings)
    if sanitized and parsed and parsed.truncated and counted and not kept_real:
        # A cap (cuprobe's record or byte cap, the sanitizer's print limit) kept none of what the summary counts
        # (the confirmer's planted records, kept past any cap, are not the run's own).
        return Classification(
            Outcome.SANITIZER_ERROR,
            f"the summary counts {counted} errors but the capped XML kept none of them (records {records}): "
            "the run cannot be called clean; raise the record or byte cap (CUPROBE_MAX_RECORDS, "
            "CUPROBE_MAX_XML_BYTES) or the sanitizer's --print-limit",
        )
    if not ev.probe_expected:
        return _saved_output(ev, findings, records)
    exit_says_errors = sanitized and ev.returncode == ev.error_exitcode
    if not records and not exit_says_errors and ev.returncode not in (0, None):
        detail = _last_line(probe.error) if probe and probe.error else _last_line(ev.stderr_tail)
        return Classification(
            Outcome.PROBE_ERROR,
            f"the probe exited {ev.returncode} without sanitizer records: {detail or 'no message'}",
        )
    if not records and (probe is None or not probe.complete):
        raised = _last_line(probe.error) if probe and probe.error else None
        why = ev.probe_unreadable or raised or "result.json missing or without its completion sentinel"
        return Classification(Outcome.PROBE_ERROR, f"the probe exited {ev.returncode} but did not finish: {why}")
    capped_at = parsed.truncated_at_case if parsed and parsed.truncated else None
    verdicts = case_verdicts(probe.cases if probe else [], findings, ev.tool, capped_at)
    if ev.launches is not None and ev.launches.filtered:
        # The dump cannot say whose launches were left out: a case with no finding may not have been checked.
        for v in verdicts:
            if v.passed and v.expectation.clean and not is_confirm_control(v.id):
                v.reason = f"{v.reason}, of the launches checked: {unchecked_note(ev.launches)}"
    # The confirmer's planted cases are checked by the confirmer, and only in a run that confirms something.
    failed_controls = [
        v for v in verdicts if not v.passed and not v.expectation.clean and not is_confirm_control(v.id)
    ]
    if failed_controls:
        return Classification(
            Outcome.SANITIZER_ERROR,
            "; ".join(f"case {v.id}: {v.reason}" for v in failed_controls)
            + f" — {unfired_controls(ev.launches, ev.filters)}",
            verdicts,
        )
    violations = [v for c in (probe.cases if probe else []) for v in c.problems()]
    # The confirmer's planted cases fire by design: they are checked by the confirmer, never the user's findings.
    real = [f for f in findings if not f.fallout and not is_confirm_control(f.case)]
    if real or violations:
        parts = []
        if real:
            parts.append(f"{len(real)} finding(s) from {records} record(s)")
        if violations:
            parts.append(f"{len(violations)} expectation violation(s): {violations[0]}")
        return Classification(Outcome.FINDINGS, "; ".join(parts), verdicts)
    what = f"compute-sanitizer {ev.tool}: 0 errors" if sanitized else "bare run completed"
    return Classification(Outcome.CLEAN, f"{what}; {len(verdicts)} case(s) met their expectations", verdicts)


def disagreeing_summaries(summary: SanitizerSummary) -> str:
    """What a log with summary lines that disagree is called: the program (or something else) printed one."""
    shown = "; ".join(f"{line!r}" for line in summary.disagreeing[:4])
    more = f" and {len(summary.disagreeing) - 4} more" if len(summary.disagreeing) > 4 else ""
    return (
        f"the output holds {len(summary.disagreeing)} summary lines that disagree ({shown}{more}): a program can "
        "print such a line itself, so the count cannot be trusted and the run cannot be called clean"
    )


def _saved_output(ev: RunEvidence, findings: list[Finding], records: int) -> Classification:
    """Saved sanitizer output (no probe ran here): its records, or clean when the summary counts none."""
    real = [f for f in findings if not f.fallout]
    summary = ev.summary or SanitizerSummary()
    failed = (
        "did not terminate successfully (killed or crashed)"
        if summary.process_failed
        else "returned an error (exited non-zero)"
        if summary.returned_error
        else None
    )
    if real:
        ended = f"; the log says the program {failed}" if failed else ""
        return Classification(Outcome.FINDINGS, f"{len(real)} finding(s) from {records} record(s){ended}")
    if failed:
        return Classification(
            Outcome.PROBE_ERROR,
            f"the log says the program {failed} and the XML holds no finding: it may have stopped before its "
            "GPU work, so the run cannot be called clean",
        )
    return Classification(Outcome.CLEAN, f"compute-sanitizer {ev.tool}: 0 errors (from saved output)")


def test_in_process_outcome(verdict: str, message: str, violations: int, process: str) -> Classification:
    """The outcome of one test of a pytest process that ran several (`process`: what that process was) and came back
    with no sanitizer record, from what pytest reported of it: `verdict` passed, failed, not-run or missing."""
    if verdict == "not-run":
        return Classification(Outcome.PROBE_ERROR, f"{message}: the test did not run")
    if verdict == "missing":
        return Classification(Outcome.PROBE_ERROR, f"{process} ended before pytest reported this test")
    if verdict == "failed" or violations:
        return Classification(Outcome.FINDINGS, f"pytest reported the test failed in {process} ({message})")
    found = "" if process.startswith("one bare") else ", in which the sanitizer found no error"
    return Classification(Outcome.CLEAN, f"clean: passed in {process}{found}")


def classify_saved(tool: Tool, summary: SanitizerSummary | None, parsed: ParseResult) -> Classification:
    """The outcome of saved sanitizer output (`cuprobe parse`): no probe ran here, so there is no result.json, and
    without the text log's summary line (`summary` None) records make `findings` but none never make `clean`."""
    if parsed.error:  # with or without a log: nothing in the file was read, so nothing can be called clean
        return Classification(Outcome.SANITIZER_ERROR, f"sanitizer XML refused or unreadable: {parsed.error}")
    if summary is None:
        if not parsed.records:
            return Classification(
                Outcome.SANITIZER_ERROR, "no records, and no --log with the summary line: cannot say the run was clean"
            )
        fallout = sum(1 for f in parsed.findings if f.fallout)  # counted as classify counts them, with a --log
        more = f" ({fallout} more the fallout of an earlier error)" if fallout else ""
        return Classification(
            Outcome.FINDINGS, f"{len(parsed.findings) - fallout} finding(s) from {parsed.records} record(s){more}"
        )
    verdict = classify(RunEvidence(tool=tool, returncode=None, summary=summary, parsed=parsed, probe_expected=False))
    unchecked = nothing_checked(parsed.launches, ["its kernel or NVTX filters"]) if parsed.launches.total else None
    if verdict.outcome is Outcome.CLEAN and unchecked:  # a launch dump in which every launch is marked filtered
        return Classification(Outcome.SANITIZER_ERROR, unchecked)
    return verdict

