"""The one place that builds the compute-sanitizer command line for a probe run."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from probes.contract import Tool
from service.models import kernel_name

# Tool-specific options cuprobe always passes.
TOOL_OPTIONS: dict[Tool, tuple[str, ...]] = {
    Tool.RACECHECK: ("--racecheck-report", "analysis"),
}


def probe_command(probe: str, params: dict[str, Any], out: Path, tool: Tool, python: str | None = None) -> list[str]:
    """`python -m probes NAME --params JSON --out FILE --tool T`."""
    return [
        python or sys.executable,
        "-m",
        "probes",
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
    kernel_filter: Sequence[str] = (),
    suppressions: Path | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """compute-sanitizer --tool T --print-limit 0 --xml --save X --error-exitcode N [filters] -- target."""
    if tool is Tool.NONE:
        raise ValueError("a bare run (tool none) has no sanitizer command")
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
    ]
    for name in kernel_filter:
        cmd += ["--kernel-name", f"kns={kernel_name(name)}"]
    if suppressions is not None:
        # Absolute, so the value can never read as an option of its own (`--injection-path=...`).
        cmd += ["--suppressions", str(suppressions.resolve())]
    for part in (*cmd, *extra, *target):
        if "\x00" in part:
            raise ValueError(f"a NUL byte in the sanitizer command line: {part!r}")
    cmd += [*TOOL_OPTIONS.get(tool, ()), *extra, "--", *target]
    return cmd
