"""The service's data model: requests, findings, outcomes and the result of one run."""

from __future__ import annotations

import hashlib
import re
from enum import IntEnum, StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from cuprobe.contract import Expectation, Tool
from cuprobe.service.models.options import SanitizerOptions

SCHEMA_VERSION = 1
# compute-sanitizer --show-backtrace values.
Backtrace = Literal["yes", "host", "device", "no"]
# A kernel name as --kernel-name kns=NAME takes it: `,` and `=` are that option's own separators (kne=, regex=),
# so they, a leading `-`, whitespace other than a space and control characters (NUL) are refused.
KERNEL_NAME = re.compile(r"[A-Za-z0-9_:<>~.$@*()\[\]& +]{1,200}")


def kernel_name(value: str) -> str:
    """`value` when it can only mean a kernel name after `kns=`; ValueError naming what is wrong otherwise."""
    if not KERNEL_NAME.fullmatch(value) or value.startswith(("-", " ")):
        raise ValueError(
            f"{value!r} is not a kernel name: use letters, digits and _:<>~.$@*()[]&+ and spaces "
            "(no ',' or '=': they would add compute-sanitizer filter options; no control characters)"
        )
    return value


KernelName = Annotated[str, AfterValidator(kernel_name)]
# How the sanitizer ranks a record; what fails a run's exit code or a gate is chosen per run or suite entry.
Severity = Literal["error", "warning"]

__all__ = [
    "SCHEMA_VERSION",
    "CaseVerdict",
    "Confirmation",
    "ConfirmationEvidence",
    "Environment",
    "Evidence",
    "ExitCode",
    "Expectation",
    "Finding",
    "Outcome",
    "ProbeRequest",
    "RangeSurvival",
    "RunResult",
    "SanitizerOptions",
    "Severity",
    "Tool",
    "exit_code_for",
    "failing",
    "signature_key",
]


class ExitCode(IntEnum):
    """Every exit code of the cuprobe CLI (run, gate, check, sweep, submit, status, results, doctor)."""

    CLEAN = 0
    FINDINGS = 1  # new findings (the gate: new or expired ones)
    USAGE = 2  # a refused request: bad input, an unreadable suite, baseline or definition
    NOT_RUN = 3  # something could not run (or a positive control came back clean): never clean
    PENDING = 4  # the job has not finished yet


class Outcome(StrEnum):
    """How a run ended; only CLEAN and FINDINGS mean the probe really ran (see docs/outcomes.md)."""

    CLEAN = "clean"
    FINDINGS = "findings"
    PROBE_ERROR = "probe_error"
    SANITIZER_ERROR = "sanitizer_error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    UNAVAILABLE = "unavailable"
    CANCELLED = "cancelled"

    @property
    def ran(self) -> bool:
        return self in (Outcome.CLEAN, Outcome.FINDINGS)

    @property
    def exit_code(self) -> ExitCode:
        """CLI and gate exit code: 0 clean, 1 findings, 3 could not run."""
        return {Outcome.CLEAN: ExitCode.CLEAN, Outcome.FINDINGS: ExitCode.FINDINGS}.get(self, ExitCode.NOT_RUN)


class Evidence(StrEnum):
    PROVEN = "proven"
    REPRODUCED = "reproduced"
    CORRELATED = "correlated"


class Confirmation(StrEnum):
    """Does an initcheck finding matter? Decided by re-running its case bare with poisoned fresh allocations."""

    CONSEQUENTIAL = "consequential"
    BENIGN = "benign"
    BLIND_SPOT = "blind-spot"
    UNCONFIRMED = "unconfirmed"

    @property
    def fails(self) -> bool:
        """Only a read that changes the result, or one nobody could check, fails a gate by itself."""
        return self in (Confirmation.CONSEQUENTIAL, Confirmation.UNCONFIRMED)


class RangeSurvival(BaseModel):
    """One flagged byte range of a buffer, and how much of it still held the sentinel before the reading kernel."""

    buffer: str
    start: int = Field(description="byte offset in the buffer")
    end: int = Field(description="byte offset one past the range")
    elements: int = Field(description="elements of the access size in the range")
    surviving: int = Field(description="elements still holding the sentinel immediately before the reading kernel")


class ConfirmationEvidence(BaseModel):
    """What the confirmer compared: result digests per poison, the first difference, sentinel survival."""

    reason: str
    digests: dict[str, str] = Field(default_factory=dict, description="bare re-run label -> digest of the case result")
    max_diff: float | None = Field(None, description="max |difference| between the two poisons' results")
    differing: int | None = Field(None, description="result elements that differ between the two poisons")
    where: str | None = Field(None, description="the first differing element and both values")
    checkpoint: str | None = Field(None, description="where the flagged memory was snapshotted")
    flagged_ranges: int = 0
    flagged_elements: int = 0
    surviving_elements: int = Field(0, description="flagged elements still holding the sentinel")
    ranges: list[RangeSurvival] = Field(default_factory=list, description="the first flagged ranges, each checked")
    bare_runs_s: float | None = Field(None, description="wall time of the bare re-runs this finding's run shared")


class ProbeRequest(BaseModel):
    """Run `probe` with `params` under `tool` (the probe's default tool when omitted)."""

    model_config = ConfigDict(extra="forbid")

    probe: str = Field(min_length=1, max_length=100, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    tool: Tool | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    # strict: a JSON request's "10" (a string) is refused, not read as a number
    timeout_s: float | None = Field(None, gt=0, le=24 * 3600, allow_inf_nan=False, strict=True)
    kernel_filter: list[KernelName] = Field(
        default_factory=list, max_length=64, description="kernel names to check (--kernel-name kns=NAME)"
    )
    suppressions: str | None = Field(
        None,
        max_length=4096,
        description="compute-sanitizer suppressions file: a path for local runs; for jobs, a name in the server's "
        "suppressions directory",
    )
    show_backtrace: Backtrace | None = Field(
        None,
        description="compute-sanitizer --show-backtrace; host backtraces are most of initcheck's cost per record "
        "(measured on the H200: 6,624 records took 21.6 s with them, 9.3 s with device only)",
    )
    confirm: bool | None = Field(
        None,
        description="re-run the cases of initcheck findings bare with poisoned memory and say whether each read "
        "matters (default: the server's setting, on)",
    )
    options: SanitizerOptions = Field(default_factory=SanitizerOptions, description="compute-sanitizer options")


class Finding(BaseModel):
    """One distinct defect: the records sharing a signature, with counts, ranges and examples."""

    signature: str
    tool: Tool
    kind: str
    message: str
    kernel: str | None = None
    file: str | None = None
    line: int | None = None
    pc: str | None = None
    space: str | None = None
    access: str | None = None
    size: int | None = None
    count: int = 0
    hazards: int | None = None
    severity: Severity = Field("error", description="error or warning, as the sanitizer ranks the record")
    threads: dict[str, list[int]] = Field(default_factory=dict, description="axis -> [min, max] thread index")
    blocks: dict[str, list[int]] = Field(default_factory=dict, description="axis -> [min, max] block index")
    addresses: list[str] = Field(default_factory=list, description="a few example addresses")
    host_frames: list[str] = Field(default_factory=list)
    device_frames: list[str] = Field(default_factory=list)
    case: str | None = None
    library: bool = False
    fallout: bool = False
    filtered: bool = False
    sanitizer_version: str | None = None
    evidence: Evidence = Evidence.PROVEN
    seen: str | None = Field(None, description="k/n when reproduced in k of n repeats")
    confirmation: Confirmation | None = Field(None, description="initcheck findings: does the read matter")
    confirmation_evidence: ConfirmationEvidence | None = None

    @property
    def fails_alone(self) -> bool:
        """Whether this finding fails a gate by itself: benign reads and the tool's blind spots do not."""
        return self.confirmation is None or self.confirmation.fails

    def location(self) -> str:
        """file:line, else the kernel or pc, else `-` (the one way to say where a finding is)."""
        if self.file:
            return f"{self.file}:{self.line}" if self.line else self.file
        return self.kernel or self.pc or "-"


def signature_key(signature: str) -> str:
    """A finding's short, stable name across jobs and sweeps: 16 hex digits of the SHA-256 of its signature."""
    return hashlib.sha256(signature.encode()).hexdigest()[:16]


class Environment(BaseModel):
    """Where a result was measured: enough to tell whether two results are comparable."""

    gpu: str | None = None
    gpu_uuid: str | None = Field(None, description="the GPU the worker was pinned to (CUDA_VISIBLE_DEVICES)")
    driver: str | None = None
    cuda: str | None = None
    sanitizer: str | None = None
    sanitizer_path: str | None = None
    torch: str | None = None
    triton: str | None = None
    python: str | None = None
    cuprobe: str | None = None
    commit: str | None = None


class CaseVerdict(BaseModel):
    """One case of a probe run: what it expected, what it got, whether that matches."""

    id: str
    expectation: Expectation
    findings: int = 0
    passed: bool = False
    reason: str = ""
    observations: dict[str, Any] = Field(default_factory=dict)


class RunResult(BaseModel):
    """The result of running one probe once: outcome, message, findings and where it was measured."""

    schema_version: int = SCHEMA_VERSION
    probe: str
    tool: Tool
    params: dict[str, Any] = Field(default_factory=dict)
    outcome: Outcome
    message: str
    records: int = 0
    summary_count: int | None = Field(None, description="errors the sanitizer's summary line counted")
    truncated: bool = False
    truncated_at_case: str | None = Field(
        None, description="when truncated: the case of the last record kept; its count and later cases' are partial"
    )
    filtered: bool = False
    options: SanitizerOptions = Field(default_factory=SanitizerOptions, description="the sanitizer options set")
    sanitizer_version: str | None = None
    environment: Environment = Field(default_factory=Environment)
    findings: list[Finding] = Field(default_factory=list)
    cases: list[CaseVerdict] = Field(default_factory=list)
    command: list[str] = Field(default_factory=list, description="the command line that reproduces this run")
    exit_code: int | None = None
    signal: int | None = None
    duration_s: float = 0.0
    probe_context: dict[str, Any] = Field(default_factory=dict)
    warm_start: bool = Field(
        False, description="run by a spare process started ahead of it, under the same command (a warm start)"
    )
    stalls: list[str] = Field(
        default_factory=list,
        description="attempts the progress watchdog stopped before this one (the run is started again once)",
    )
    confirmation_s: float | None = Field(None, description="wall time of the confirmation's bare re-runs")
    confirmation_control: list[dict[str, Any]] = Field(
        default_factory=list, description="the confirmer's own planted cases: expected and decided verdicts"
    )
    control_records: int = Field(
        0, description="of `records` (and the sanitizer's summary count), those of the confirmer's planted cases"
    )
    timing: dict[str, float] = Field(
        default_factory=dict,
        description="wall seconds per stage of producing this result, in the order they ran (service.models.timing)",
    )

    def confirmation_counts(self) -> dict[str, int]:
        return confirmation_counts(self.findings)


def confirmation_counts(findings: list[Finding]) -> dict[str, int]:
    """Findings per confirmation (`not confirmed` for those with none: other tools, or confirmation off)."""
    out = {c.value: 0 for c in Confirmation}
    out["not confirmed"] = 0
    for finding in findings:
        if not finding.fallout:
            out[finding.confirmation.value if finding.confirmation else "not confirmed"] += 1
    return out


# Which confirmation a merged finding (several cases or repeats of one signature) shows: the one that matters most.
_CONFIRMATION_RANK = {
    Confirmation.CONSEQUENTIAL: 0,
    Confirmation.UNCONFIRMED: 1,
    None: 2,
    Confirmation.BENIGN: 3,
    Confirmation.BLIND_SPOT: 4,
}


def strongest_confirmation(findings: list[Finding]) -> Finding:
    """The finding whose confirmation decides for a group: consequential, then unconfirmed or none, then the rest."""
    return min(findings, key=lambda f: _CONFIRMATION_RANK[f.confirmation])


def failing(findings: list[Finding], fail_on: Severity = "error") -> list[Finding]:
    """The findings that fail at `fail_on`: errors only, or errors and warnings (fallout never counts, nor reads the
    confirmer showed benign or a blind spot of the tool)."""
    return [
        f for f in findings if not f.fallout and f.fails_alone and (fail_on == "warning" or f.severity == "error")
    ]


def exit_code_for(result: RunResult, fail_on: Severity = "error") -> ExitCode:
    """The exit code of `cuprobe run/exec`: like the outcome's, but warnings-only findings pass at fail-on error."""
    if result.outcome is Outcome.FINDINGS and not failing(result.findings, fail_on):
        return ExitCode.CLEAN
    return result.outcome.exit_code
