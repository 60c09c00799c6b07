"""Sweep definitions: a TOML grid of probes x parameters x tools x repeats, validated with pydantic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cuprobe.contract import Tool
from cuprobe.service.models import SanitizerOptions
from cuprobe.service.models.controls import NO_CONTROL, uncontrolled
from cuprobe.service.models.files import load_toml, parse_toml
from cuprobe.service.models.problems import respell
from cuprobe.service.owntests.discover import TestEntry
from cuprobe.service.probing.admission import BadRequest, options_for, probe_named, tool_for


class DefinitionError(ValueError):
    """A sweep definition that cannot be used; the message names the file and the field."""


class IntRange(BaseModel):
    """An inclusive integer range in TOML: `n = { first = 1, last = 128 }`."""

    model_config = ConfigDict(extra="forbid")

    first: int
    last: int
    step: int = Field(1, ge=1)

    @model_validator(mode="after")
    def _not_empty(self) -> IntRange:
        if self.last < self.first:
            raise ValueError(f"last ({self.last}) is before first ({self.first}): the range holds no value")
        return self

    def steps(self) -> range:
        return range(self.first, self.last + 1, self.step)

    def values(self) -> list[int]:
        return list(self.steps())


# Cases one sweep may hold: a grid past this is a typo (a range's `last` a few digits too long) more often than a plan,
# and it would be planned for minutes before anything runs.
MAX_CASES = 100_000


class Entry(BaseModel):
    """One probe over a grid of parameters under some tools; each grid point is one case per tool."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        "",
        pattern=r"^$|^[A-Za-z0-9][A-Za-z0-9._-]*$",
        max_length=80,
        description="unique label in case keys (letters, digits, `._-`); the probe name when empty",
    )
    probe: str
    tools: list[Tool] = Field(min_length=1, alias="tool", description="one tool, or a list: each runs the grid")
    params: dict[str, Any] = Field(default_factory=dict, description="fixed parameters of every case")
    grid: dict[str, list[Any] | IntRange] = Field(default_factory=dict, description="axis -> values")
    repeats: int | None = Field(None, ge=1, le=50)
    batch: bool = Field(True, description="run many cases in one process where attribution allows")
    batch_size: int = Field(512, ge=1, le=4096, description="most grid cases in one process")
    timeout_s: float | None = Field(None, gt=0)
    options: SanitizerOptions = Field(default_factory=SanitizerOptions, description="compute-sanitizer options")

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        """`tool` and grid axes named as the probe's parameters (`variants`), as in suites; old names warn."""
        where = f"entry {data.get('name') or data.get('probe')}" if isinstance(data, dict) else "entry"
        data = respell(data, "tools", "tool", where)
        if isinstance(data, dict) and isinstance(data.get("tool"), str):
            data = {**data, "tool": [data["tool"]]}
        if isinstance(data, dict) and isinstance(data.get("grid"), dict) and data.get("probe") == "narrow-matmul":
            data = {**data, "grid": respell(data["grid"], "variant", "variants", f"{where}: grid")}
        return data

    @model_validator(mode="after")
    def _known_probe_and_tools(self) -> Entry:
        try:
            probe = probe_named(self.probe)
            for tool in self.tools:
                tool_for(probe, tool)
                if tool is not Tool.NONE:
                    options_for(probe, tool, self.options)
        except BadRequest as exc:
            raise ValueError(exc.message) from exc
        self.name = self.name or self.probe
        return self

    @field_validator("grid")
    @classmethod
    def _axes_with_distinct_values(cls, grid: dict[str, list[Any] | IntRange]) -> dict[str, list[Any] | IntRange]:
        """Each axis holds values, each once: an empty axis would run nothing, a repeated value the same case twice."""
        for axis, values in grid.items():
            if isinstance(values, IntRange):
                continue
            if not values:
                raise ValueError(f"grid axis {axis} has no values: the entry would run no case")
            seen: list[Any] = []
            for value in values:
                if value in seen:
                    raise ValueError(f"grid axis {axis} gives {value!r} twice: each case runs once")
                seen.append(value)
        return grid

    @model_validator(mode="after")
    def _axes_not_fixed(self) -> Entry:
        """An axis that is also a fixed parameter: one of the two would be ignored, so neither is guessed."""
        if both := sorted(set(self.params) & set(self.grid)):
            raise ValueError(
                f"{', '.join(both)} is both a fixed parameter (params) and a grid axis: give it in one of them"
            )
        return self

    @field_validator("tools")
    @classmethod
    def _tools_once(cls, tools: list[Tool]) -> list[Tool]:
        if repeated := sorted({t.value for t in tools if tools.count(t) > 1}):
            raise ValueError(f"tool {', '.join(repeated)} is given twice: each tool runs the grid once")
        return tools

    def cases(self) -> int:
        """How many cases the entry's grid makes (every tool runs each point once)."""
        count = len(self.tools)
        for values in self.grid.values():
            count *= len(values.steps() if isinstance(values, IntRange) else values)  # a range is never listed
        return count

    def axes(self) -> dict[str, list[Any]]:
        return {k: v.values() if isinstance(v, IntRange) else list(v) for k, v in self.grid.items()}


class RepoSource(BaseModel):
    """`[repo]`: the git repository whose [[test]] entries the sweep runs, at the head of `branch`, after `build`."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, description="what `git clone` takes: a URL or a path")
    branch: str = Field("main", min_length=1, pattern=r"^[^\s~^:?*\[\\]+$")
    build: str | None = Field(None, description="shell command run in the checkout before its tests (exit 0: built)")
    build_timeout_s: float = Field(3600, gt=0, le=24 * 3600)


class SweepDefinition(BaseModel):
    """A whole sweep: its name (sweeps of one name are diffed against each other), repeats and entries."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    repeats: int = Field(1, ge=1, le=50)
    entries: list[Entry] = Field(default_factory=list, alias="entry")
    repo: RepoSource | None = None
    test: list[TestEntry] = Field(
        default_factory=list, description="the team's own tests (as a suite's [[test]]), run in the [repo] checkout"
    )

    @model_validator(mode="after")
    def _something_to_run(self) -> SweepDefinition:
        if not self.entries and not self.test:
            raise ValueError("a sweep needs at least one [[entry]] (a probe) or [[test]] (with a [repo])")
        if self.test and self.repo is None:
            raise ValueError("[[test]] entries need a [repo] (url, branch, build): their tests run in its checkout")
        if self.repo is not None and not self.test:
            raise ValueError("[repo] is read only with [[test]] entries: add the tests to run in its checkout")
        names = [e.name for e in self.entries] + [t.name for t in self.test]
        if both := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"entry and test names must be unique (they name the cases): {', '.join(both)}")
        if missing := uncontrolled(self.test):
            # As the gate refuses such a suite: without a control a sanitizer that sees nothing reads as a clean night.
            raise ValueError(
                f"no positive control for {', '.join(missing)} among the [[test]] entries: {NO_CONTROL}; "
                + "; ".join(
                    f"for {tool} add a [[test]] that runs a test with a known defect, with tool = \"{tool}\", "
                    "control = true and expect = the finding kind it must report"
                    for tool in missing
                )
            )
        return self

    @field_validator("entries")
    @classmethod
    def _unique_names(cls, entries: list[Entry]) -> list[Entry]:
        names = [e.name for e in entries]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"entry names must be unique (give each a `name`): {', '.join(dupes)}")
        total = sum(entry.cases() for entry in entries)
        if total > MAX_CASES:
            counts = ", ".join(f"{e.name} {e.cases():,}" for e in entries)
            raise ValueError(f"the grid makes {total:,} cases ({counts}); a sweep holds at most {MAX_CASES:,}")
        return entries


def parse_definition(text: str, source: str = "<definition>") -> SweepDefinition:
    """A validated SweepDefinition from TOML text; DefinitionError names the source and the bad field."""
    return parse_toml(text, source, SweepDefinition, DefinitionError)


def load_definition(path: Path) -> SweepDefinition:
    """A validated SweepDefinition from its file; DefinitionError names the file and the bad field."""
    return load_toml(path, "sweep definition", SweepDefinition, DefinitionError)
