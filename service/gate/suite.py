"""Gate suites: TOML files naming probes, parameters, tools, repeats and the positive controls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from probes.contract import Tool
from service.models import ProbeRequest
from service.models.files import load_toml
from service.probing.admission import BadRequest, admit

# What to add when a suite uses a tool without a control: the catalog's control for each tool.
CONTROL_HINTS: dict[Tool, str] = {
    Tool.INITCHECK: 'probe = "uninit-read", tool = "initcheck", control = true',
    Tool.MEMCHECK: 'probe = "planted", tool = "memcheck", params = { defect = "oob" }, control = true',
    Tool.RACECHECK: 'probe = "planted", tool = "racecheck", params = { defect = "race" }, control = true',
    Tool.SYNCCHECK: 'probe = "planted", tool = "synccheck", params = { defect = "syncwarp" }, control = true',
}


class SuiteError(ValueError):
    """A suite the gate refuses; the message names the file, the entry and the problem."""


class SuiteEntry(BaseModel):
    """One probe run of the suite (repeated `repeats` times); `control` marks a positive control."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    probe: str = Field(min_length=1)
    tool: Tool
    params: dict[str, Any] = Field(default_factory=dict)
    repeats: int = Field(1, ge=1, le=50)
    control: bool = Field(False, description="a planted defect the tool must see; its expected findings never fail")
    timeout_s: float | None = Field(None, gt=0, le=24 * 3600)

    def request(self) -> ProbeRequest:
        return ProbeRequest(probe=self.probe, tool=self.tool, params=self.params, timeout_s=self.timeout_s)


class Suite(BaseModel):
    """A whole suite as written in its TOML file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    baseline: str | None = Field(None, description="baseline file, relative to the suite file")
    arch: str | None = Field(None, description="GPU architecture for service runs, e.g. sm90")
    deadline_s: float | None = Field(None, gt=0, description="seconds a service job may wait for a worker")
    probe: list[SuiteEntry] = Field(min_length=1)
    path: Path = Field(Path("suite.toml"), exclude=True)

    @property
    def entries(self) -> list[SuiteEntry]:
        return self.probe

    def baseline_path(self) -> Path:
        """The suite's own baseline file: its `baseline` key, else SUITE.baseline.toml beside it."""
        return self.path.parent / (self.baseline or f"{self.path.stem}.baseline.toml")


def _check_entry(path: Path, entry: SuiteEntry) -> SuiteEntry:
    where = f"{path}: [[probe]] {entry.name}"
    try:
        admitted = admit(entry.probe, entry.tool, entry.params)
    except BadRequest as exc:
        raise SuiteError(f"{where}: {exc}") from exc
    tool = admitted.tool
    if entry.control:
        expectation = admitted.probe.expectation(admitted.model, tool)
        if expectation.clean or expectation.tool is not tool:
            raise SuiteError(
                f"{where} is marked control = true, but probe {entry.probe} with these parameters plants "
                f"no defect that {tool} must see"
            )
    return entry.model_copy(update={"params": admitted.params})


def load_suite(path: Path) -> Suite:
    """Read and check a suite; SuiteError says what is wrong, including a tool without a positive control."""
    suite = load_toml(path, "suite", Suite, SuiteError, extra={"path": path})
    names = [entry.name for entry in suite.entries]
    if duplicates := sorted({n for n in names if names.count(n) > 1}):
        raise SuiteError(f"{path}: probe names must be unique; repeated: {', '.join(duplicates)}")
    suite.probe = [_check_entry(path, entry) for entry in suite.entries]
    used = {entry.tool for entry in suite.entries} - {Tool.NONE}
    controlled = {entry.tool for entry in suite.entries if entry.control}
    if missing := sorted(used - controlled):
        raise SuiteError(
            f"{path}: no positive control for {', '.join(missing)}: a broken sanitizer tool would read as clean; "
            + "; ".join(f"for {tool} add a [[probe]] with {CONTROL_HINTS[tool]}" for tool in missing)
        )
    return suite
