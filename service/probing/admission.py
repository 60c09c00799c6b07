"""Admission: the one place that turns (probe, tool, params, sanitizer options) into a checked request, its GPU
need and its queue."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from cuprobe.contract import Tool
from cuprobe.probes import registry
from cuprobe.probes.allocator import default_allocator
from cuprobe.probes.base import Probe
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest
from cuprobe.service.models.options import SanitizerOptions
from cuprobe.service.models.problems import bool_for_number, describe, text_for_number
from cuprobe.service.models.queues import Lane, queue_for
from cuprobe.service.sanitizer.options import OptionRefused, check_options

COMMAND_PROBE = "command"
# A service job names a suppressions file in the operator's directory by a bare name, never a path.
SUPPRESSIONS_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


class BadRequest(ValueError):
    """A request cuprobe refuses: `field` names the offending field, `message` the problem, `status` the HTTP
    status the API answers with."""

    def __init__(self, field: str, message: str, status: int = 422) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Admission:
    """A request that passed admission: the probe, its tool (the default filled in), its validated parameters,
    its sanitizer options and whether it needs a GPU worker."""

    probe: Probe[Any]
    tool: Tool
    model: BaseModel
    needs_gpu: bool
    options: SanitizerOptions = field(default_factory=SanitizerOptions)

    @property
    def params(self) -> dict[str, Any]:
        """The validated parameters as JSON (every default filled in)."""
        return self.model.model_dump(mode="json")

    def queue(self, arch: str, lane: Lane) -> str:
        """The queue this request's job goes to: `arch`'s GPU queue or cpu, in `lane`."""
        return queue_for(needs_gpu=self.needs_gpu, arch=arch, lane=lane)


def probe_named(name: str) -> Probe[Any]:
    """The registered probe called `name`; BadRequest (field `probe`) lists the known ones."""
    try:
        return registry.get(name)
    except registry.UnknownProbe as exc:
        raise BadRequest("probe", str(exc)) from exc


def tool_for(probe: Probe[Any], tool: Tool | str | None) -> Tool:
    """`tool` (the probe's default when None) if the probe runs under it; BadRequest (field `tool`) otherwise."""
    if tool is None:
        return probe.tools[0]
    chosen = Tool(tool)
    if chosen not in probe.tools:
        allowed = ", ".join(t.value for t in probe.tools)
        raise BadRequest("tool", f"probe {probe.name} does not run under {chosen.value}: it runs under {allowed}")
    return chosen


def gpu_needed(probe: Probe[Any], model: BaseModel, tool: Tool) -> bool:
    """Any sanitizer tool needs a GPU; a bare run needs one when the probe says so for these parameters."""
    return tool is not Tool.NONE or probe.gpu_needed(model)


def refuse_unencodable(value: Any, where: str) -> None:
    """BadRequest naming the first string under `value` that holds a NUL byte (argv cannot carry one) or is not
    valid Unicode (a lone surrogate, which JSON can spell as `\\ud800`: it cannot be stored, shown or passed on)."""
    if isinstance(value, str):
        if "\x00" in value:
            raise BadRequest(where, "a NUL byte is not allowed")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = f"U+{ord(value[exc.start]):04X}"
            raise BadRequest(where, f"not valid Unicode: a lone surrogate ({bad}) at character {exc.start}") from exc
    if isinstance(value, dict):
        for key, item in value.items():
            refuse_unencodable(str(key), where)
            refuse_unencodable(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            refuse_unencodable(item, f"{where}.{index}")


def options_for(probe: Probe[Any], tool: Tool, options: SanitizerOptions) -> None:
    """Refuse sanitizer options for another tool (or for a bare run), and application-only for `command` (it
    would check only the probe's own Python process); BadRequest (field `options`)."""
    refuse_unencodable(options.model_dump(mode="json"), "options")
    try:
        check_options(options, tool)
    except OptionRefused as exc:
        raise BadRequest("options", str(exc)) from exc
    if options.target_processes == "application-only" and probe.name == COMMAND_PROBE:
        raise BadRequest(
            "options",
            "--target-processes application-only would check only the command probe's own Python process, "
            "never the command it starts: leave target_processes unset for command and test entries",
        )


def sanitizer_fields(request: ProbeRequest, tool: Tool) -> None:
    """Refuse what only a sanitizer run reads (kernel filters, suppressions, backtraces) in a bare run, where it
    would be silently ignored; BadRequest naming the field."""
    if tool is not Tool.NONE:
        return
    for name in ("kernel_filter", "suppressions", "show_backtrace"):
        if getattr(request, name):
            raise BadRequest(name, "applies only under a sanitizer tool: a bare run (tool none) would ignore it")


def admit(
    probe: str, tool: Tool | str | None, params: Mapping[str, Any], options: SanitizerOptions | None = None
) -> Admission:
    """Check a request against the probe registry: known probe, a tool it runs under, valid parameters it does
    not refuse (defaults filled in, a torch probe's allocator included) and sanitizer options for that tool.
    BadRequest names the first offending field (`params.<name>` for a parameter)."""
    found = probe_named(probe)
    chosen = tool_for(found, tool)
    refuse_unencodable(dict(params), "params")
    if slip := bool_for_number(found.Params, params) or text_for_number(found.Params, params):
        raise BadRequest(f"params.{slip[0]}", f"bad parameters for probe {found.name}: {slip[1]}")
    try:
        model = found.Params.model_validate(dict(params))
    except ValidationError as exc:
        where = ".".join(str(part) for part in exc.errors()[0]["loc"])
        said = describe(exc, fields=list(found.Params.model_fields))
        field = f"params.{where}" if where else "params"
        raise BadRequest(field, f"bad parameters for probe {found.name}: {said}") from exc
    if "allocator" in type(model).model_fields and getattr(model, "allocator", None) is None:
        # A torch probe's allocator made explicit, so the stored request and the reproducing command say which.
        model = model.model_copy(update={"allocator": default_allocator(chosen)})
    if (refusal := found.refusal(model, chosen)) is not None:
        raise BadRequest("tool", refusal)
    chosen_options = options or SanitizerOptions()
    options_for(found, chosen, chosen_options)
    return Admission(found, chosen, model, gpu_needed(found, model, chosen), chosen_options)


def suppressions_file(value: str, *, trusted: bool, settings: Settings, field: str = "options") -> Path:
    """A local run takes a path (in the repository); a service job a bare name in the operator's directory, never
    a path or an option (a symlink there is not followed). BadRequest naming `field` otherwise."""
    what = "" if field == "suppressions" else "suppressions: "  # the error already starts with its field
    if trusted:
        path = Path(value)
    else:
        if not SUPPRESSIONS_NAME.fullmatch(value):
            raise BadRequest(field, f"{what}a service job names a file in the suppressions directory, not {value!r}")
        if settings.suppressions_dir is None:
            raise BadRequest(field, f"{what}this service has no suppressions directory (CUPROBE_SUPPRESSIONS_DIR)")
        path = settings.suppressions_dir / value
        if path.is_symlink():
            raise BadRequest(field, f"{what}{value} is a symlink in the suppressions directory: not followed")
    if not path.is_file():
        raise BadRequest(field, f"{what}no such file {path}")
    return path.resolve()


def needs_gpu_by_default(name: str) -> bool:
    """Whether probe `name` at its default tool and parameters needs a GPU (its class flag when its defaults
    are not a valid request, e.g. a probe with required parameters)."""
    probe = registry.get(name)
    try:
        return admit(name, None, {}).needs_gpu
    except BadRequest:
        return probe.needs_gpu
