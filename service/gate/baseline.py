"""Baselines: known findings by signature, each with a reason, an optional expiry and a flaky flag."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field

from cuprobe.contract import Tool
from cuprobe.service.models.files import load_toml

BASELINE_VERSION: Literal[1] = 1


class BaselineError(ValueError):
    """A baseline file the gate cannot use; the message names the file and the problem."""


class BaselineEntry(BaseModel):
    """One known finding: accepted (until `expires`) for `reason`."""

    model_config = ConfigDict(extra="forbid")

    signature: str = Field(min_length=1)
    reason: str = Field(min_length=1, description="why this finding does not block a merge")
    expires: date | None = Field(None, description="from this day on the finding fails the gate again")
    flaky: bool = Field(False, description="comes and goes between runs: not reported fixed when unseen")
    probe: str | None = None
    tool: Tool | None = None
    kind: str | None = None
    location: str | None = None
    sanitizer_version: str | None = Field(None, description="the compute-sanitizer that recorded it")

    def expired(self, today: date) -> bool:
        return self.expires is not None and self.expires <= today


class Baseline(BaseModel):
    """A whole baseline file; `sanitizers` is the version each tool ran with when it was recorded."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = BASELINE_VERSION  # the only format there is: a newer file is refused, not misread
    sanitizers: dict[str, str] = Field(default_factory=dict)
    finding: list[BaselineEntry] = Field(default_factory=list)

    def by_signature(self) -> dict[str, BaselineEntry]:
        return {entry.signature: entry for entry in self.finding}


def load_baseline(path: Path) -> Baseline:
    """Read a baseline; BaselineError names what is wrong (bad TOML, a missing reason, a repeated signature)."""
    baseline = load_toml(path, "baseline", Baseline, BaselineError)
    signatures = [entry.signature for entry in baseline.finding]
    if repeated := sorted({s for s in signatures if signatures.count(s) > 1}):
        raise BaselineError(f"baseline {path}: signature listed twice: {', '.join(repeated)}")
    return baseline


HEADER = "# cuprobe gate baseline: known findings by signature; review changes like code.\n"


def comment_lines(path: Path) -> int:
    """How many comment lines the baseline at `path` holds besides cuprobe's header (0 when there is none): what a
    rewrite by write_baseline will not keep (an entry's why belongs in its reason, which is kept)."""
    try:
        lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
    except OSError:
        return 0
    return sum(1 for line in lines if line.lstrip().startswith("#") and line + "\n" != HEADER)


def write_baseline(baseline: Baseline, path: Path) -> None:
    """Write `baseline` as TOML (dates as TOML dates), replacing the file atomically."""
    body = baseline.model_dump(mode="python", exclude_none=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(HEADER + tomli_w.dumps(body))
    tmp.replace(path)
