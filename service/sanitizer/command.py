"""The one place that builds the compute-sanitizer command line for a probe run."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cuprobe.contract import Tool
from cuprobe.service.models import kernel_name
from cuprobe.service.models.options import NAMING, SanitizerOptions

# Options cuprobe passes for a tool unless the request sets them itself.
TOOL_DEFAULTS: dict[Tool, SanitizerOptions] = {
    Tool.RACECHECK: SanitizerOptions(racecheck_report="analysis"),
}


def passed_anyway(tool: Tool) -> SanitizerOptions:
    """What a run under `tool` passes when the request leaves it unset: cuprobe's defaults, and NVTX on (the
    sanitizer's own default, which cuprobe also passes for torch's NVTX allocator)."""
    return TOOL_DEFAULTS.get(tool, SanitizerOptions()).model_copy(update={"nvtx": True})


def probe_command(probe: str, params: dict[str, Any], out: Path, tool: Tool, python: str | None = None) -> list[str]:
    """`python -m cuprobe.probes NAME --params JSON --out FILE --tool T`."""
    return [
        python or sys.executable,
        "-m",
        "cuprobe.probes",
        probe,
        "--params",
        json.dumps(params, sort_keys=True),
        "--out",
        str(out),
        "--tool",
        tool.value,
    ]


def sanitizer_command(
    sanitizer: Path,
    tool: Tool,
    target: Sequence[str],
    *,
    xml: Path,
    error_exitcode: int,
    options: SanitizerOptions | None = None,
    kernel_filter: Sequence[str] = (),
    suppressions: Path | None = None,
    extra: Sequence[str] = (),
    nvtx: bool = False,
) -> list[str]:
    """compute-sanitizer --tool T --print-limit 0 --xml --save X --error-exitcode N [options] -- target.

    `options` are the request's; `kernel_filter` adds kns= filters; `suppressions` is the resolved file that
    replaces the options' suppressions name or path.

    nvtx: `--nvtx yes` unless the options say otherwise, so the tool honours NVTX memory registrations (torch's
    allocator under caching-nvtx)."""
    if tool is Tool.NONE:
        raise ValueError("a bare run (tool none) has no sanitizer command")
    chosen = TOOL_DEFAULTS.get(tool, SanitizerOptions()).merged(options)
    kernels = [f"kns={kernel_name(name)}" for name in kernel_filter]
    update: dict[str, object] = {"kernel_name": [*chosen.kernel_name, *kernels]}
    if suppressions is not None:
        # Absolute, so the value can never read as an option of its own (`--injection-path=...`).
        update["suppressions"] = str(suppressions.resolve())
    if nvtx and chosen.nvtx is None:
        update["nvtx"] = True
    chosen = chosen.model_copy(update=update)
    # Info-level racecheck reports are dropped from the saved XML at the default print level (measured: the print
    # level filters what the sanitizer saves), so asking to detect them asks to keep them.
    info = ["--print-level", "info"] if tool is Tool.RACECHECK and chosen.racecheck_detect_level == "info" else []
    cmd = [
        str(sanitizer),
        "--tool",
        tool.value,
        "--print-limit",
        "0",
        "--xml",
        "--save",
        str(xml),
        "--error-exitcode",
        str(error_exitcode),
        *info,
    ]
    for flag, value in chosen.pairs():
        if value is None:
            cmd.append(flag)
        elif flag in NAMING or value.startswith("-"):
            cmd.append(f"{flag}={value}")
        else:
            cmd += [flag, value]
    cmd += [*extra, "--", *target]
    for part in cmd:
        if "\x00" in part:
            raise ValueError(f"a NUL byte in the sanitizer command line: {part!r}")
    return cmd
