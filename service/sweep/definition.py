"""Sweep definitions: a TOML grid of probes x parameters x tools x repeats, validated with pydantic."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from probes import registry
from probes.contract import Tool
from service.models import SanitizerOptions
from service.sanitizer.options import OptionRefused, check_options


class DefinitionError(ValueError):
    """A sweep definition that cannot be used; the message names the file and the field."""


class IntRange(BaseModel):
    """An inclusive integer range in TOML: `n = { first = 1, last = 128 }`."""

    model_config = ConfigDict(extra="forbid")

    first: int
    last: int
    step: int = Field(1, ge=1)

    def values(self) -> list[int]:
        return list(range(self.first, self.last + 1, self.step))


class Entry(BaseModel):
    """One probe over a grid of parameters under some tools; each grid point is one case per tool."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("", description="unique label in case keys; the probe name when empty")
    probe: str
    tools: list[Tool] = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict, description="fixed parameters of every case")
    grid: dict[str, list[Any] | IntRange] = Field(default_factory=dict, description="axis -> values")
    repeats: int | None = Field(None, ge=1, le=50)
    batch: bool = Field(True, description="run many cases in one process where attribution allows")
    batch_size: int = Field(512, ge=1, le=4096, description="most grid cases in one process")
    timeout_s: float | None = Field(None, gt=0)
    options: SanitizerOptions = Field(default_factory=SanitizerOptions, description="compute-sanitizer options")

    @model_validator(mode="after")
    def _known_probe_and_tools(self) -> Entry:
        try:
            probe = registry.get(self.probe)
        except registry.UnknownProbe as exc:
            raise ValueError(str(exc)) from exc
        wrong = [t.value for t in self.tools if t not in probe.tools]
        if wrong:
            raise ValueError(
                f"probe {self.probe} does not run under {', '.join(wrong)}; "
                f"allowed: {', '.join(t.value for t in probe.tools)}"
            )
        for tool in self.tools:
            if tool is not Tool.NONE:
                try:
                    check_options(self.options, tool)
                except OptionRefused as exc:
                    raise ValueError(str(exc)) from exc
        self.name = self.name or self.probe
        return self

    def axes(self) -> dict[str, list[Any]]:
        return {k: v.values() if isinstance(v, IntRange) else list(v) for k, v in self.grid.items()}


class SweepDefinition(BaseModel):
    """A whole sweep: its name (sweeps of one name are diffed against each other), repeats and entries."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    repeats: int = Field(1, ge=1, le=50)
    entries: list[Entry] = Field(min_length=1, alias="entry")

    @field_validator("entries")
    @classmethod
    def _unique_names(cls, entries: list[Entry]) -> list[Entry]:
        names = [e.name for e in entries]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"entry names must be unique (give each a `name`): {', '.join(dupes)}")
        return entries


def parse_definition(text: str, source: str = "<definition>") -> SweepDefinition:
    """A validated SweepDefinition from TOML text; DefinitionError names the source and the bad field."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DefinitionError(f"{source}: not valid TOML: {exc}") from exc
    try:
        return SweepDefinition.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        raise DefinitionError(f"{source}: {where}: {first['msg']}") from exc


def load_definition(path: Path) -> SweepDefinition:
    try:
        text = path.read_text()
    except OSError as exc:
        raise DefinitionError(f"cannot read sweep definition {path}: {exc.strerror or exc}") from exc
    return parse_definition(text, str(path))
