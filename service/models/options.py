"""Sanitizer options a job, suite entry or sweep may set: typed, validated, and tied to the tool they belong to."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cuprobe.contract import Tool
from cuprobe.service.models.problems import bool_for_number

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
    "--check-exit-code": None,
    "--check-tensor-ops": None,
    "--nvtx-include": None,
    "--nvtx-exclude": None,
    "--destroy-on-device-error": None,
    "--force-blocking-launches": None,
    "--force-synchronization-limit": None,
    "--num-cuda-barriers": None,
    "--ignore-getprocaddress-notfound": None,
    "--check-optix-leaks": None,
    "--check-cache-control": Tool.MEMCHECK,
    "--detect-missing-module-unload": Tool.MEMCHECK,
    "--report-api-errors": Tool.MEMCHECK,
    "--report-device-side-allocation-failure": Tool.MEMCHECK,
    "--track-stream-ordered-races": Tool.MEMCHECK,
    "--racecheck-memcpy-async": Tool.RACECHECK,
    "--racecheck-fence-proxy-async": Tool.RACECHECK,
    "--racecheck-deadlock-timeout": Tool.RACECHECK,
    "--racecheck-continue-on-deadlock": Tool.RACECHECK,
    "--racecheck-num-workers": Tool.RACECHECK,
    "--racecheck-filter-cluster-id": Tool.RACECHECK,
    "--check-optix": Tool.INITCHECK,
    "--unused-memory-threshold": Tool.INITCHECK,
    "--unused-shared-memory-report-limit": Tool.INITCHECK,
    "--initcheck-address-space": Tool.INITCHECK,
    "--missing-barrier-init-is-fatal": Tool.SYNCCHECK,
}
# Flags that take no value: present when true, absent when false.
SWITCHES = frozenset(
    {
        "--track-unused-memory",
        "--force-blocking-launches",
        "--ignore-getprocaddress-notfound",
        "--check-optix-leaks",
        "--check-cache-control",
        "--detect-missing-module-unload",
        "--check-optix",
    }
)
# Options that change how fast the tool works, not what it checks: left out of findings' signatures.
# (Blocking launches and a synchronization limit change which stream orders a run sees, so they stay in.)
SPEED_ONLY = frozenset({"racecheck_num_workers"})
# compute-sanitizer options cuprobe sets itself or does not pass, and why: refused by name, not as unknown.
NOT_PASSED: dict[str, str] = {
    "tool": "name the tool with --tool / -t (or `tool` in a suite, sweep or job)",
    "xml": "cuprobe always asks for the XML and reads it itself",
    "save": "cuprobe saves the XML into the run's folder and reads it from there",
    "read": "cuprobe runs the program; `cuprobe parse` reads saved output",
    "log-file": "cuprobe reads the sanitizer's text output from its stdout",
    "prefix": "cuprobe reads the sanitizer's lines with their default prefix (`cuprobe parse --prefix` reads saved "
    "logs written with another)",
    "print-limit": "cuprobe sets --print-limit 0 so no record is left out (CUPROBE_MAX_RECORDS caps what it keeps)",
    "print-level": "it filters what the sanitizer saves, not only what it prints: cuprobe keeps the default and passes "
    "--print-level info itself with racecheck_detect_level info (--fail-on error|warning chooses what fails)",
    "quiet": "cuprobe reads the sanitizer's text output for its summary line",
    "error-exitcode": "cuprobe sets its own, to tell the sanitizer's findings from the program's exit code",
    "demangle": "cuprobe decides demangling itself (names are demangled in every finding)",
    "show-backtrace": "cuprobe chooses it per tool; `cuprobe run --show-backtrace`, a job's `show_backtrace` or "
    "CUPROBE_SHOW_BACKTRACE set it",
    "num-callers-host": "cuprobe reads whole host backtraces (a leak is named by its first frame outside CUDA)",
    "num-callers-device": "cuprobe reads whole device backtraces",
    "backtrace-short": "cuprobe reads the backtraces as the sanitizer writes them by default",
    "help": "not an option of a run",
    "version": "not an option of a run (`cuprobe doctor` names the sanitizer's version)",
    "strip-paths": "cuprobe makes paths relative to the source roots itself",
    "mode": "cuprobe launches the program under the sanitizer itself",
    "port": "cuprobe leases ports to each sanitizer process so that several run at once",
    "max-connections": "cuprobe leases ports to each sanitizer process so that several run at once",
    "kill": "cuprobe stops a run past its timeout itself",
    "require-cuda-init": "cuprobe needs the sanitizer to say when a program never used CUDA (`not_cuda`), so that such "
    "a run is never called clean",
    "language": "fortran numbering shifts the thread and block indices that cuprobe attributes findings by",
    "racecheck-trace-sync": "it reports every synchronization as a record",
    "initcheck-track-filtered-global-memory": "cuprobe sets it for the confirmation's control where the version has it",
    "generate-coredump": "cuprobe does not write coredumps into its run folders",
    "coredump-name": "cuprobe does not write coredumps into its run folders",
    "coredump-behavior": "cuprobe does not write coredumps into its run folders",
    "injection-path": "it would load other code into the sanitized program",
    "injection-path32": "it would load other code into the sanitized program",
    "preload-library": "it would load other code into the sanitized program",
    "support-32bit": "cuprobe runs 64-bit programs",
    "print-session-details": "cuprobe records the session (versions, GPU, driver) in every result itself",
    "save-session-details": "cuprobe records the session (versions, GPU, driver) in every result itself",
    "dump-kernel-launches": "cuprobe passes it itself where kernel or NVTX filters choose the launches checked "
    "(compute-sanitizer 2026.4 and later), and reads it to tell a filter that selects none from a clean run",
    "target-processes-filter": "cuprobe runs its own wrapper around the program: a filter that matches no process "
    "leaves nothing checked",
}
_FILTER = re.compile(r"^(kernel_name|kne|kernel_substring|kns|regex)=.+$")
_FILTER_PART = re.compile(r"^(kernel_name|kne|kernel_substring|kns|regex)=")
# The sanitizer's one-letter spellings of options it also spells out.
SHORT_NAMES = {"c": "launch-count", "s": "launch-skip", "q": "quiet", "h": "help", "v": "version"}


# Options whose value names a file, a kernel or an NVTX range: passed as one argument, `--flag=value`, so that a
# value can never be read as an option of its own.
NAMING = frozenset({"--kernel-name", "--kernel-name-exclude", "--nvtx-include", "--nvtx-exclude", "--suppressions"})


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
    check_exit_code: bool | None = Field(None, description="--check-exit-code")
    check_tensor_ops: bool | None = Field(None, description="--check-tensor-ops (2026.4 and later)")
    nvtx_include: list[str] = Field(default_factory=list, description="--nvtx-include scopes (2026.4 and later)")
    nvtx_exclude: list[str] = Field(default_factory=list, description="--nvtx-exclude scopes (2026.4 and later)")
    destroy_on_device_error: Literal["context", "kernel"] | None = Field(None, description="--destroy-on-device-error")
    force_blocking_launches: bool | None = Field(None, description="--force-blocking-launches (a switch)")
    force_synchronization_limit: int | None = Field(None, ge=0, description="--force-synchronization-limit")
    num_cuda_barriers: int | None = Field(None, ge=0, description="--num-cuda-barriers (0: detected)")
    ignore_getprocaddress_notfound: bool | None = Field(None, description="--ignore-getprocaddress-notfound (a switch)")
    check_optix_leaks: bool | None = Field(None, description="--check-optix-leaks (a switch)")
    check_cache_control: bool | None = Field(None, description="memcheck --check-cache-control (a switch)")
    detect_missing_module_unload: bool | None = Field(
        None, description="memcheck --detect-missing-module-unload (a switch)"
    )
    report_api_errors: Literal["all", "extended", "explicit", "no"] | None = Field(
        None, description="memcheck --report-api-errors"
    )
    report_device_side_allocation_failure: bool | None = Field(
        None, description="memcheck --report-device-side-allocation-failure (2026.4 and later)"
    )
    track_stream_ordered_races: Literal["all", "use-before-alloc", "use-after-free", "no"] | None = Field(
        None, description="memcheck --track-stream-ordered-races"
    )
    racecheck_memcpy_async: bool | None = Field(None, description="racecheck --racecheck-memcpy-async")
    racecheck_fence_proxy_async: bool | None = Field(
        None, description="racecheck --racecheck-fence-proxy-async (2026.4 and later)"
    )
    racecheck_deadlock_timeout: int | None = Field(None, ge=0, description="racecheck --racecheck-deadlock-timeout ms")
    racecheck_continue_on_deadlock: bool | None = Field(None, description="racecheck --racecheck-continue-on-deadlock")
    racecheck_num_workers: int | None = Field(None, ge=0, le=1024, description="racecheck --racecheck-num-workers")
    racecheck_filter_cluster_id: int | None = Field(
        None, ge=0, description="racecheck --racecheck-filter-cluster-id (2026.4 and later)"
    )
    check_optix: bool | None = Field(None, description="initcheck --check-optix (a switch)")
    unused_memory_threshold: int | None = Field(
        None, ge=0, le=100, description="initcheck --unused-memory-threshold (percent)"
    )
    unused_shared_memory_report_limit: int | None = Field(
        None, ge=0, description="initcheck --unused-shared-memory-report-limit (2026.4 and later)"
    )
    initcheck_address_space: Literal["global", "shared", "all"] | None = Field(
        None, description="initcheck --initcheck-address-space (2026.4 and later)"
    )
    missing_barrier_init_is_fatal: bool | None = Field(None, description="synccheck --missing-barrier-init-is-fatal")

    @model_validator(mode="before")
    @classmethod
    def _not_passed(cls, data: Any) -> Any:
        """An option cuprobe sets itself or does not pass is refused with the reason, not as an unknown name."""
        if isinstance(data, dict):
            for name in data:
                flag = name.lstrip("-").replace("_", "-") if isinstance(name, str) else ""
                if why := NOT_PASSED.get(SHORT_NAMES.get(flag, flag)):
                    raise ValueError(f"cuprobe does not pass --{SHORT_NAMES.get(flag, flag)}: {why}")
            fields = {str(name).lstrip("-").replace("-", "_"): value for name, value in data.items()}
            if slip := bool_for_number(cls, fields):
                raise ValueError(slip[1].replace("_", "-"))  # the sanitizer's spelling: launch-count
        return data

    @field_validator("kernel_name", "kernel_name_exclude")
    @classmethod
    def _filters(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _FILTER.match(value):
                raise ValueError(f"{value!r} is not a kernel filter: use kne=NAME, kns=SUBSTRING or regex=EXPRESSION")
            for part in value.split(","):  # key=value,key=value; a regex (last, by convention) may hold commas
                if part.startswith("regex="):
                    break
                if not _FILTER_PART.match(part):
                    raise ValueError(f"{value!r}: {part!r} is not a filter key=value (kne, kns, regex)")
        return values

    @field_validator("nvtx_include", "nvtx_exclude")
    @classmethod
    def _scopes(cls, values: list[str]) -> list[str]:
        for value in values:
            if not value.strip() or value != value.strip():
                raise ValueError(f"{value!r} is not an NVTX scope: a name, without surrounding spaces")
            if value.startswith("-"):
                raise ValueError(f"{value!r} is not an NVTX scope: a scope never starts with '-' (an option does)")
        return values

    @field_validator("suppressions")
    @classmethod
    def _suppressions_file(cls, value: str | None) -> str | None:
        if value is not None and value.startswith("-"):
            raise ValueError(f"{value!r} is not a suppressions file: a name or path never starts with '-'")
        return value

    @model_validator(mode="after")
    def _nvtx_for_scopes(self) -> SanitizerOptions:
        if self.nvtx is False and (self.nvtx_include or self.nvtx_exclude):
            raise ValueError("nvtx_include and nvtx_exclude need NVTX support: leave nvtx unset (or yes)")
        return self

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

    def selecting(self) -> list[str]:
        """The options that choose which launches are checked (kernel and NVTX filters, a nonzero --launch-skip or
        --launch-count), as `--flag value`: compute-sanitizer says nothing when they select no launch at all."""
        chosen = ("--kernel-name", "--kernel-name-exclude", "--nvtx-include", "--nvtx-exclude")
        counts = ("--launch-skip", "--launch-count")  # 0: skip none, check every launch
        return [
            f"{flag} {value}" for flag, value in self.pairs() if flag in chosen or (flag in counts and value != "0")
        ]

    @property
    def filters_kernels(self) -> bool:
        """Whether some kernels go unchecked (kernel-name or NVTX filters): initcheck may then report reads of
        memory that an unchecked kernel wrote."""
        return bool(self.kernel_name or self.kernel_name_exclude or self.nvtx_include or self.nvtx_exclude)

    @property
    def reports_at_teardown(self) -> bool:
        """Whether the sanitizer reports something as the program's CUDA contexts are torn down (memcheck's leaks,
        initcheck's unused memory, OptiX leaks, modules never unloaded): a process that skips that teardown would lose
        it."""
        return (
            self.leak_check == "full"
            or bool(self.track_unused_memory)
            or bool(self.check_optix_leaks)
            or bool(self.detect_missing_module_unload)
        )

    def checking_key(self) -> str:
        """key() without the SPEED_ONLY options: what changes what is checked (a sweep case's setup)."""
        return self.model_copy(update=dict.fromkeys(SPEED_ONLY)).key()

    def signature_key(self, passed_anyway: SanitizerOptions | None = None) -> str:
        """checking_key() without the suppressions file, nor any option set to what the run passes anyway
        (`passed_anyway`: cuprobe's own defaults for the tool)."""
        same = {
            name: None
            for name in type(self).model_fields
            if passed_anyway is not None
            and getattr(passed_anyway, name) not in (None, [])
            and getattr(self, name) == getattr(passed_anyway, name)
        }
        return self.model_copy(update={"suppressions": None, **same}).checking_key()

    def for_tool(self, tool: Tool) -> SanitizerOptions:
        """These options without those that belong to another tool (OPTION_TOOL): a suite's options for one entry."""
        if tool is Tool.NONE:
            return type(self)()
        drop = [name for name in type(self).model_fields if OPTION_TOOL.get(_flag(name)) not in (None, tool)]
        return self.model_copy(
            update={name: type(self).model_fields[name].get_default(call_default_factory=True) for name in drop}
        )

    def merged(self, other: SanitizerOptions | None) -> SanitizerOptions:
        """These options with every field `other` sets taken from `other` (entry over suite, job over default)."""
        if other is None:
            return self
        return self.model_copy(update=other.model_dump(exclude_defaults=True))

    def foreign(self, tool: Tool, table: dict[str, Tool | None] | None = None) -> list[tuple[str, Tool]]:
        """Options set here that belong to another tool than `tool`: (flag, its tool)."""
        table = OPTION_TOOL if table is None else table
        return [(flag, owner) for flag in self.flags() if (owner := table.get(flag)) is not None and owner is not tool]
