"""The probe contract: what a probe declares and the result.json it writes (no service imports)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cuprobe import internal_env
from cuprobe.tool import Tool as Tool  # re-exported: the contract names the tools its results carry

RESULT_SCHEMA_VERSION = 1
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_PARAMS = 2
EXIT_UNAVAILABLE = 69  # EX_UNAVAILABLE: no CUDA device, pycuda or torch missing
# The file a beating probe (Probe.beats) rewrites as each case starts; the runner's watchdog reads its changes.
HEARTBEAT_ENV = internal_env.HEARTBEAT
# The harness's flag to end its process with os._exit once its result is written (runner.quick_exits).
QUICK_EXIT_FLAG = "--quick-exit"
# The harness's flag to import torch on a second thread from its start, where its parameters use torch
# (service/probing/runner.py, prefetches_torch; probes/prefetch.py).
PREFETCH_TORCH_FLAG = "--prefetch-torch"
# Case ids of the confirmer's own planted cases (probes/confirm_control.py): never the user's findings.
CONFIRM_CONTROL_PREFIX = "cuprobe-confirm-control/"


def is_confirm_control(case_id: str | None) -> bool:
    return bool(case_id and case_id.startswith(CONFIRM_CONTROL_PREFIX))


# The confirmer's planted kernels (kernels/confirm_control.cu): a writer the run excludes, and checked readers.
CONTROL_HIDDEN_WRITER = "cuprobe_hidden_write"
CONTROL_READER_PREFIX = "cuprobe_control_"


def is_control_kernel(name: str | None) -> bool:
    """Whether a record's kernel is one of the confirmer's planted ones (they never appear in a probe's own cases)."""
    return bool(name and (name.startswith(CONTROL_READER_PREFIX) or name == CONTROL_HIDDEN_WRITER))


class Expectation(BaseModel):
    """What a case expects: clean, or findings of `kind` from `tool` (a positive control)."""

    model_config = ConfigDict(frozen=True)

    clean: bool = True
    tool: Tool | None = None
    kind: str | None = None

    @classmethod
    def positive_control(cls, tool: Tool, kind: str) -> Expectation:
        return cls(clean=False, tool=tool, kind=kind)

    def describe(self) -> str:
        return "clean" if self.clean else f"{self.tool} finding of kind {self.kind}"


class Allocation(BaseModel):
    """One device buffer a case allocated: findings whose address falls inside belong to the case."""

    name: str
    start: int
    size: int


class ObservedFinding(BaseModel):
    """A defect the probe observed itself, under a signature of its own that stays stable across runs."""

    signature: str
    kind: str
    message: str
    seen: str | None = Field(None, description="k/n when seen in k of n comparisons")
    evidence: Literal["proven", "reproduced", "correlated"] = "proven"
    details: dict[str, Any] = Field(default_factory=dict)


class CaseResult(BaseModel):
    """What the probe observed for one case."""

    id: str
    params: dict[str, Any] = Field(default_factory=dict)
    expectation: Expectation = Field(default_factory=Expectation)
    observations: dict[str, Any] = Field(default_factory=dict)
    allocations: list[Allocation] = Field(default_factory=list)
    violations: list[str] = Field(default_factory=list)
    findings: list[ObservedFinding] = Field(default_factory=list)

    def problems(self) -> list[str]:
        """Every violated expectation and observed finding of this case, as messages."""
        return self.violations + [f.message for f in self.findings]


class ProbeResult(BaseModel):
    """The whole result.json; `complete` is the completion sentinel, true only when the probe finished."""

    schema_version: int = RESULT_SCHEMA_VERSION
    probe: str
    tool: Tool
    params: dict[str, Any] = Field(default_factory=dict)
    cases: list[CaseResult] = Field(default_factory=list)
    context: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    unavailable: str | None = None
    complete: bool = False
