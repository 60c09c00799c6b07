"""What a sweep stores: each process it ran, each case with its merged findings, and the sweep itself."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, Field

from cuprobe.service.models import Finding, Outcome, Tool
from cuprobe.service.models.bisect import Bisection, SweepSource


class CaseRepeat(BaseModel):
    """One case in one repeat: its outcome and the findings attributed to it."""

    outcome: Outcome
    message: str = ""
    findings: list[Finding] = Field(default_factory=list)
    truncated: bool = False
    observations: dict[str, dict[str, Any]] = Field(default_factory=dict, description="probe case id -> observations")


class SweepCase(BaseModel):
    """One grid case over all repeats: outcome, whether repeats disagreed, findings with seen k/n."""

    key: str
    entry: str
    probe: str
    tool: Tool
    point: dict[str, Any] = Field(default_factory=dict)
    probe_case: str | None = None
    control: bool = Field(False, description="a positive control case")
    added: bool = Field(False, description="not a grid case: run only to carry its batch's positive control")
    setup: str | None = Field(
        None,
        description="what the case ran with beyond its grid point: its entry's fixed params and sanitizer options "
        "(None: stored before sweeps recorded it); a diff does not call a finding fixed across a change of it",
    )
    process: int
    batched: bool
    reason: str = Field("", description="why this case ran in a process of its own")
    outcome: Outcome
    outcomes: list[Outcome] = Field(default_factory=list, description="one per repeat")
    message: str = ""
    flaky: bool = False
    truncated: bool = False
    findings: list[Finding] = Field(default_factory=list)
    observations: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="the probe's observations per probe case (last repeat that ran)"
    )

    @property
    def records(self) -> int:
        return sum(f.count for f in self.findings if not f.fallout)


class ProcessRecord(BaseModel):
    """One planned process: what it ran, whether it was batched (and why not), its control and timings."""

    index: int
    probe: str
    tool: Tool
    params: dict[str, Any]
    batched: bool
    reason: str = ""
    cases: int
    control: str | None = None
    control_fired: list[bool] = Field(default_factory=list, description="one per repeat (batched only)")
    extra_cases: list[str] = Field(default_factory=list, description="cases run only to carry the control")
    outcomes: list[Outcome] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    durations_s: list[float] = Field(default_factory=list)
    warm: list[bool] = Field(
        default_factory=list, description="per run: handed to a spare process that was started ahead (a warm start)"
    )
    stalls: list[int] = Field(
        default_factory=list, description="per repeat: attempts the progress watchdog stopped before the one kept"
    )
    stages: list[dict[str, float]] = Field(
        default_factory=list,
        description="per run: wall seconds per stage (prepare, run, parse, confirm...; service.models.timing)",
    )
    truncated: bool = False


class Sweep(BaseModel):
    """A stored sweep: one run of a definition."""

    id: str
    definition: str
    state: str = "running"
    message: str = ""  # why a failed sweep stopped, or how a finished one was resumed (its summary's message)
    started_at: datetime
    finished_at: datetime | None = None
    wall_s: float | None = None
    sanitizer_version: str | None = None
    driver: str | None = None
    environment: dict[str, Any] = Field(default_factory=dict)
    processes: list[ProcessRecord] = Field(default_factory=list)
    cases: list[SweepCase] = Field(default_factory=list)
    source: SweepSource | None = Field(None, description="the repository commit its [[test]] entries ran against")
    bisections: list[Bisection] = Field(
        default_factory=list, description="the commit that brought each new finding of a [[test]] case, or fixed one"
    )

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for case in self.cases:
            out[case.outcome.value] = out.get(case.outcome.value, 0) + 1
        out["flaky"] = sum(c.flaky for c in self.cases)
        return out


# What a diff reads of stored sweeps: a Sweep, or the store's lean copy of one (service.db.sweeps.SweepChanges).


class FindingSeen(Protocol):
    """What a diff reads of a finding (a Finding, or the store's lean row of one)."""

    @property
    def signature(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def seen(self) -> str | None: ...
    @property
    def fallout(self) -> bool: ...


class CaseSeen(Protocol):
    """What a diff reads of a sweep case."""

    @property
    def key(self) -> str: ...
    @property
    def outcome(self) -> Outcome: ...
    @property
    def flaky(self) -> bool: ...
    @property
    def message(self) -> str: ...
    @property
    def findings(self) -> Sequence[FindingSeen]: ...
    @property
    def setup(self) -> str | None: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def control(self) -> bool: ...


class SweepSeen(Protocol):
    """What a diff reads of a sweep: a Sweep, or SweepStore.for_diff's lean copy of one."""

    @property
    def id(self) -> str: ...
    @property
    def definition(self) -> str: ...
    @property
    def sanitizer_version(self) -> str | None: ...
    @property
    def driver(self) -> str | None: ...
    @property
    def started_at(self) -> datetime: ...
    @property
    def cases(self) -> Sequence[CaseSeen]: ...


def complete(case: CaseSeen) -> bool:
    """Whether a case's run says what it holds and what it does not: it ran, and no record cap cut it short."""
    return case.outcome.ran and not case.truncated
