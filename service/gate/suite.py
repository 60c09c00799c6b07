"""Gate suites: TOML files naming probes, parameters, tools, repeats and the positive controls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cuprobe.contract import Tool
from cuprobe.service.config import get_settings
from cuprobe.service.models import ProbeRequest, SanitizerOptions, Severity
from cuprobe.service.models.controls import NO_CONTROL, uncontrolled
from cuprobe.service.models.files import load_toml
from cuprobe.service.models.options import OPTION_TOOL
from cuprobe.service.models.problems import respell
from cuprobe.service.owntests.discover import (
    MAX_TIMEOUT_S,
    SANITIZER_MARGIN_S,
    TestCommand,
    TestEntry,
    command_params,
    discover,
)
from cuprobe.service.probing.admission import BadRequest, admit
from cuprobe.service.probing.confirm import refuse_unconfirmable

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
    options: SanitizerOptions = Field(default_factory=SanitizerOptions, description="compute-sanitizer options")
    fail_on: Severity | None = Field(None, description="error or warning; the suite's when unset")
    case: str | None = Field(None, description="for a [[test]] process: the test it runs (node id, test name)")
    confirm: bool | None = Field(None, description="confirm initcheck findings (None: the settings' choice)")

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        """`tools = ["x"]` (the sweep's old spelling) is read as `tool = "x"`, with a warning."""
        data = respell(data, "tools", "tool", f"[[probe]] {data.get('name')}" if isinstance(data, dict) else "entry")
        if isinstance(data, dict) and isinstance(data.get("tool"), list):
            if len(data["tool"]) != 1:
                raise ValueError("a suite entry runs one tool: give one `tool`, and one entry per tool")
            data = {**data, "tool": data["tool"][0]}
        return data

    def request(self) -> ProbeRequest:
        return ProbeRequest(
            probe=self.probe,
            tool=self.tool,
            params=self.params,
            timeout_s=self.timeout_s,
            options=self.options,
            confirm=self.confirm,
        )


class FileRun(BaseModel):
    """One pytest file's tests run in one sanitized process first (`per = "file"`): `entry` is that process, `tests`
    the entries of its tests as `per = "test"` runs them, in order (service/gate/files.py)."""

    model_config = ConfigDict(frozen=True)

    path: str
    entry: SuiteEntry
    tests: list[SuiteEntry]


class Suite(BaseModel):
    """A whole suite as written in its TOML file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    baseline: str | None = Field(None, description="baseline file, relative to the suite file")
    arch: str | None = Field(None, description="GPU architecture for service runs, e.g. sm90")
    deadline_s: float | None = Field(None, gt=0, description="seconds a service job may wait for a worker")
    fail_on: Severity = Field("error", description="what fails the gate: errors only, or warnings too")
    options: SanitizerOptions = Field(default_factory=SanitizerOptions, description="options for every entry")
    probe: list[SuiteEntry] = Field(default_factory=list)
    test: list[TestEntry] = Field(default_factory=list, description="the user's tests: pytest, ctest, gtest, command")
    files: list[FileRun] = Field(default_factory=list, exclude=True, description="discovered: files run as one process")
    path: Path = Field(Path("suite.toml"), exclude=True)

    @property
    def entries(self) -> list[SuiteEntry]:
        return self.probe

    def fail_on_of(self, entry: SuiteEntry) -> Severity:
        return entry.fail_on or self.fail_on

    def baseline_path(self) -> Path:
        """The suite's own baseline file: its `baseline` key, else SUITE.baseline.toml beside it."""
        return self.path.parent / (self.baseline or f"{self.path.stem}.baseline.toml")


def _check_entry(path: Path, entry: SuiteEntry, where: str | None = None) -> SuiteEntry:
    where = where or f"{path}: [[probe]] {entry.name}"
    try:
        admitted = admit(entry.probe, entry.tool, entry.params, entry.options)
        refuse_unconfirmable(entry.request(), admitted.tool, get_settings())
    except BadRequest as exc:
        raise SuiteError(f"{where}: {exc.message}") from exc
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
    if not suite.probe and not suite.test:
        raise SuiteError(f"{path}: a suite needs at least one [[probe]] or [[test]] entry")
    # A suite's options reach the entries of the tool each belongs to (a general option reaches every sanitizer
    # entry): `leak_check` at the top sets memcheck's entries, not the initcheck control beside them.
    tools = {e.tool for e in suite.probe} | {e.tool for e in suite.test}
    if unused := [f for f in suite.options.flags() if (owner := OPTION_TOOL.get(f)) is not None and owner not in tools]:
        raise SuiteError(
            f"{path}: options: {', '.join(f'{f} is a {OPTION_TOOL[f]} option' for f in unused)}, and no entry runs "
            "that tool"
        )
    suite.probe = [
        e.model_copy(update={"options": suite.options.for_tool(e.tool).merged(e.options)}) for e in suite.probe
    ]
    suite.test = [
        e.model_copy(update={"options": suite.options.for_tool(e.tool).merged(e.options)}) for e in suite.test
    ]
    names = [entry.name for entry in suite.entries] + [entry.name for entry in suite.test]
    if duplicates := sorted({n for n in names if names.count(n) > 1}):
        raise SuiteError(f"{path}: probe names must be unique; repeated: {', '.join(duplicates)}")
    suite.probe = [_check_entry(path, entry) for entry in suite.entries]
    for test in suite.test:  # the options and tool of a test entry, checked before anything is discovered
        expect = {"expect": test.expect} if test.control else {}
        dummy = test_entry(test, "-", {"argv": ["true"], "case": "-", **expect}, 0)
        _check_entry(path, dummy, f"{path}: [[test]] {test.name}")
    if missing := uncontrolled([*suite.entries, *suite.test]):
        raise SuiteError(
            f"{path}: no positive control for {', '.join(missing)}: {NO_CONTROL}; "
            + "; ".join(f"for {tool} add a [[probe]] with {CONTROL_HINTS[tool]}" for tool in missing)
        )
    return suite


def test_entry(test: TestEntry, case: str, params: dict[str, Any], index: int) -> SuiteEntry:
    """The command-probe entry that runs one process of a [[test]] entry."""
    return SuiteEntry(
        name=f"{test.name}.{index:04d}",
        probe="command",
        tool=test.tool,
        params=params,
        repeats=test.repeats,
        control=test.control,
        timeout_s=test.timeout_s + SANITIZER_MARGIN_S,
        options=test.options,
        fail_on=test.fail_on,
        case=case,
    )


def expand(suite: Suite, here: str | None = None) -> Suite:
    """The suite with every [[test]] entry discovered into one command-probe entry per process (per test, or per
    binary); DiscoveryError says which entry could not list its tests, SuiteError which generated name (TEST.0000)
    a [[probe]] entry already has."""
    generated, files = [], []
    for test in suite.test:
        found = discover(test, here)
        mine = []
        for index, command in enumerate(found):
            entry = test_entry(test, command.case, command_params(test, command), index)
            # What discovery made goes through admission too, before anything runs: refused, it is exit 2 naming the
            # entry, never a traceback half-way through the suite.
            mine.append(_check_entry(suite.path, entry, f"{suite.path}: [[test]] {test.name} ({command.case})"))
        generated += mine
        files += _file_runs(suite.path, test, found, mine)
    taken = {entry.name for entry in suite.probe}
    if clash := sorted(entry.name for entry in [*generated, *(f.entry for f in files)] if entry.name in taken):
        raise SuiteError(
            f"{suite.path}: [[probe]] names {', '.join(clash)} are also the names of [[test]] processes "
            "(TEST.0000, TEST.0001, ...): rename those probe entries"
        )
    return suite.model_copy(update={"probe": [*suite.probe, *generated], "test": [], "files": files})


def _file_runs(path: Path, test: TestEntry, found: list[TestCommand], entries: list[SuiteEntry]) -> list[FileRun]:
    """For a pytest entry run per file: each file of two or more tests as one process that runs them all. A positive
    control, or an entry expecting another exit status than 0, runs per test."""
    if test.kind != "pytest" or test.per != "file" or test.control or test.expect_exit != 0:
        return []
    groups: dict[str, list[tuple[TestCommand, SuiteEntry]]] = {}
    for command, entry in zip(found, entries, strict=True):
        groups.setdefault(command.case.partition("::")[0], []).append((command, entry))
    out = []
    for index, (file, members) in enumerate(groups.items()):
        if len(members) < 2:
            continue
        first = members[0][0]
        command = first.model_copy(update={"case": file, "argv": [*first.argv[:-1], *(c.argv[-1] for c, _ in members)]})
        params = {
            **command_params(test, command),
            "tests": [c.case for c, _ in members],
            "timeout_s": min(test.timeout_s * len(members), MAX_TIMEOUT_S),
            "expect_exit": None,  # a failed test is judged from pytest's report of it, not from the exit status
            "not_run_output": None,
        }
        entry = test_entry(test, file, params, index).model_copy(
            # A file's findings are never its tests' final ones (each test then runs alone, and is confirmed alone).
            update={
                "name": f"{test.name}.file{index:04d}",
                "timeout_s": params["timeout_s"] + SANITIZER_MARGIN_S,
                "confirm": False,
            }
        )
        out.append(FileRun(path=file, entry=_check_entry(path, entry, f"{path}: [[test]] {test.name} ({file})"),
                           tests=[e for _, e in members]))
    return out
