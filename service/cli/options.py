"""`--sanitizer-option NAME=VALUE` flags of cuprobe run/exec/submit, read into SanitizerOptions; `--fail-on`; and the
check of an output file's path that a command makes before it runs anything."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from cuprobe.service.models import SanitizerOptions, Severity

SanitizerOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--sanitizer-option",
        "-S",
        help="a compute-sanitizer option as NAME=VALUE without the dashes, repeatable: leak-check=full, padding=512, "
        "track-unused-memory, kernel-name=kns=gemm, racecheck-report=hazard, suppressions=FILE ...",
    ),
]
FailOnOpt = Annotated[str, typer.Option("--fail-on", help="error: only errors give exit 1; warning: warnings do too")]
_BOOLEAN = {"yes": True, "true": True, "1": True, "no": False, "false": False, "0": False}


def parse_options(pairs: list[str]) -> SanitizerOptions:
    """SanitizerOptions from NAME=VALUE pairs; a bad name or value raises typer.BadParameter naming it."""
    from pydantic import ValidationError

    from cuprobe.service.models import SanitizerOptions
    from cuprobe.service.models.options import NOT_PASSED, SHORT_NAMES

    values: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.lstrip("-").partition("=")
        name = SHORT_NAMES.get(name, name).replace("_", "-")  # -S c=3 is --launch-count 3; print_limit is print-limit
        field = name.replace("-", "_")
        info = SanitizerOptions.model_fields.get(field)
        if info is None and (why := NOT_PASSED.get(name.replace("_", "-"))):
            raise typer.BadParameter(f"cuprobe does not pass --{name}: {why}", param_hint="-S")
        if info is None:
            known = ", ".join(f.replace("_", "-") for f in SanitizerOptions.model_fields)
            raise typer.BadParameter(f"cuprobe knows no sanitizer option {name!r}; it passes: {known}", param_hint="-S")
        if info.annotation is not None and "list" in str(info.annotation):
            values.setdefault(field, []).append(value)
        elif "bool" in str(info.annotation):
            if sep and value.lower() not in _BOOLEAN:
                raise typer.BadParameter(f"{name} takes yes or no, not {value!r}", param_hint="-S")
            values[field] = _BOOLEAN[value.lower()] if sep else True
        else:
            values[field] = value
    try:
        return SanitizerOptions.model_validate(values)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]).replace("_", "-")
        raise typer.BadParameter(f"{where}: {problem['msg']}", param_hint="-S") from exc


def fail_on(value: str) -> Severity:
    if value == "error":
        return "error"
    if value == "warning":
        return "warning"
    raise typer.BadParameter(f"--fail-on takes error or warning, not {value!r}")


def unwritable(path: Path) -> str | None:
    """Why the output file `path` could not be written, said after its name (` is a directory; name a file`), or
    None: checked before a long run, whose result must not be lost to a traceback at the end."""
    if path.is_dir():
        return " is a directory; name a file"
    if not path.parent.is_dir():
        return f": the directory {path.parent} does not exist"
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return " is not writable"
    return None
