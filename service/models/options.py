"""Sanitizer options a job, suite entry or sweep may set: typed, validated, and tied to the tool they belong to."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from probes.contract import Tool

# The tool whose section of `compute-sanitizer --help` lists each option (None: "General options", every tool).
# From the help text captured from 2025.3.1.0 and 2026.4.0.0 (tests/data/captures/*/help.txt); the binary's own
# help decides at run time (service.sanitizer.options), this table only when no binary is at hand.
OPTION_TOOL: dict[str, Tool | None] = {
    "--leak-check": Tool.MEMCHECK,
    "--padding": Tool.MEMCHECK,
    "--check-api-memory-access": Tool.INITCHECK,
    "--check-device-heap": None,
    "--check-bulk-copy": None,
    "--check-warpgroup-mma": None,
    "--racecheck-report": Tool.RACECHECK,
    "--racecheck-detect-level": Tool.RACECHECK,
    "--track-unused-memory": Tool.INITCHECK,
    "--kernel-name": None,
    "--kernel-name-exclude": None,
    "--launch-skip": None,
    "--launch-count": None,
    "--target-processes": None,
    "--nvtx": None,
    "--suppressions": None,
    "--launch-timeout": None,
}
# Flags that take no value: present when true, absent when false.
SWITCHES = frozenset({"--track-unused-memory"})
_FILTER = re.compile(r"^(kernel_name|kne|kernel_substring|kns|regex)=.+$")


def _flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


class SanitizerOptions(BaseModel):
    """compute-sanitizer options; None (or empty) keeps the sanitizer's own default and is not passed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    leak_check: Literal["full", "no"] | None = Field(None, description="memcheck --leak-check")
    padding: int | None = Field(None, ge=0, le=1 << 30, description="memcheck --padding (bytes after each allocation)")
    check_api_memory_access: bool | None = Field(None, description="--check-api-memory-access")
    check_device_heap: bool | None = Field(None, description="--check-device-heap")
    check_bulk_copy: bool | None = Field(None, description="--check-bulk-copy")
    check_warpgroup_mma: bool | None = Field(None, description="--check-warpgroup-mma")
    racecheck_report: Literal["all", "hazard", "analysis"] | None = Field(
        None, description="racecheck --racecheck-report (cuprobe uses analysis when unset)"
    )
    racecheck_detect_level: Literal["info", "warn", "error"] | None = Field(
        None, description="racecheck --racecheck-detect-level"
    )
    track_unused_memory: bool | None = Field(None, description="initcheck --track-unused-memory")
    kernel_name: list[str] = Field(
        default_factory=list, description="--kernel-name filters, e.g. kns=gemm (kne=, kns=, regex= keys)"
    )
    kernel_name_exclude: list[str] = Field(default_factory=list, description="--kernel-name-exclude filters")
    launch_skip: int | None = Field(None, ge=0, description="--launch-skip")
    launch_count: int | None = Field(None, ge=0, description="--launch-count (0: unlimited)")
    target_processes: Literal["all", "application-only"] | None = Field(None, description="--target-processes")
    nvtx: bool | None = Field(None, description="--nvtx")
    suppressions: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="--suppressions: a path in the repository for local runs, a file name in the operator's "
        "suppressions directory for service jobs",
    )
    launch_timeout: int | None = Field(None, ge=0, le=24 * 3600, description="--launch-timeout seconds (0: forever)")

    @field_validator("kernel_name", "kernel_name_exclude")
    @classmethod
    def _filters(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _FILTER.match(value):
                raise ValueError(
                    f"{value!r} is not a kernel filter: use kne=NAME, kns=SUBSTRING or regex=EXPRESSION"
                )
        return values

    def pairs(self) -> list[tuple[str, str | None]]:
        """(flag, value) for every option set, in field order; a switch has value None."""
        out: list[tuple[str, str | None]] = []
        for name in type(self).model_fields:
            value = getattr(self, name)
            flag = _flag(name)
            if value is None or value == []:
                continue
            if flag in SWITCHES:
                if value:
                    out.append((flag, None))
            elif isinstance(value, list):
                out += [(flag, str(item)) for item in value]
            elif isinstance(value, bool):
                out.append((flag, _yes_no(value)))
            else:
                out.append((flag, str(value)))
        return out

    def flags(self) -> list[str]:
        """The option names set (each once)."""
        return list(dict.fromkeys(flag for flag, _ in self.pairs()))

    def key(self) -> str:
        """A canonical, stable text of the options set ('' when none): findings under different keys differ."""
        return ",".join(f"{flag[2:]}={value}" if value is not None else flag[2:] for flag, value in self.pairs())

    def merged(self, other: SanitizerOptions | None) -> SanitizerOptions:
        """These options with every field `other` sets taken from `other` (entry over suite, job over default)."""
        if other is None:
            return self
        return self.model_copy(update=other.model_dump(exclude_defaults=True))

    def foreign(self, tool: Tool, table: dict[str, Tool | None] | None = None) -> list[tuple[str, Tool]]:
        """Options set here that belong to another tool than `tool`: (flag, its tool)."""
        table = OPTION_TOOL if table is None else table
        return [(flag, owner) for flag in self.flags() if (owner := table.get(flag)) is not None and owner is not tool]
