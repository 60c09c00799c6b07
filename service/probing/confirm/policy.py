"""Which runs the confirmation takes on, what it refuses, and how its control and re-runs are set up."""

from __future__ import annotations

from typing import Any

from cuprobe.contract import Tool
from cuprobe.probes import registry
from cuprobe.probes.base import Probe
from cuprobe.probes.confirm_control import CHECKED_READERS, HIDDEN_WRITER
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest
from cuprobe.service.probing.admission import BadRequest

# compute-sanitizer 2026.x tracks the writes of kernels a filter excludes unless told not to; 2025.x has no
# such option (and did not track them).
TRACK_FILTERED_SINCE = 2026

HOST_API_REASON = (
    "a host API call (a copy to the host) read this memory after the case's kernels ran; the bare re-runs snapshot a "
    "case's memory before its reading kernel, so they cannot tell whether a kernel initcheck did not see wrote it"
)

NOT_PLANTED = (
    "the run's own kernel filters need compute-sanitizer 2026.x to track the writes of the kernels they leave out, "
    "so the blind-spot control's excluded write is tracked as well"
)


def confirming(request: ProbeRequest, tool: Tool, settings: Settings) -> bool:
    """Whether this run confirms its findings: initcheck, confirmation on, and a probe that can poison."""
    enabled = request.confirm if request.confirm is not None else settings.confirm
    return tool is Tool.INITCHECK and enabled and poison_refusal(request) is None


def poison_refusal(request: ProbeRequest) -> str | None:
    """Why the request's probe cannot poison its memory with the request's parameters, or None."""
    probe = registry.get(request.probe)
    try:
        params = probe.Params.model_validate(request.params)
    except ValueError:  # admission refuses such parameters before anything runs
        return probe.unpoisonable_reason
    return probe.poison_refusal(params)


def refuse_unconfirmable(request: ProbeRequest, tool: Tool, settings: Settings) -> None:
    """BadRequest where the confirmation could not check itself: an NVTX include filter leaves the confirmer's
    control kernels (launched outside the user's ranges) unchecked, so every such run would end could-not-run."""
    if confirming(request, tool, settings) and request.options.nvtx_include:
        raise BadRequest(
            "options",
            "nvtx_include would leave the confirmation's control kernels unchecked (they run outside your NVTX "
            "ranges): filter with kernel_name, or turn the confirmation off for this run (cuprobe run --no-confirm, "
            '"confirm": false in a job, CUPROBE_CONFIRM=0 for a suite or sweep)',
        )


def _tracks_filtered(version: str | None) -> bool:
    try:
        return int((version or "").split(".")[0]) >= TRACK_FILTERED_SINCE
    except ValueError:
        return False


def user_filters(request: ProbeRequest) -> bool:
    """Whether the run's own options leave some of the program's kernels unchecked (kernel or NVTX filters)."""
    return bool(request.kernel_filter or request.options.filters_kernels)


def blind_spot_planted(version: str | None, filtered: bool) -> bool:
    """Whether the blind-spot control's write is hidden from initcheck in this run. 2025.x never tracks the writes
    of a kernel its filters leave out; 2026.x does unless told not to, and telling it not to would hide the writes of
    the user's own filtered kernels too, so that initcheck reports reads of memory they wrote (captured:
    tests/data/captures/2026.4.0.0/probe_narrow-matmul_initcheck_kernel_guarded). Where the user filters, 2026.x keeps
    tracking, and the control's hidden write must come out seen: no finding."""
    return not (filtered and _tracks_filtered(version))


def control_options(version: str | None, kernel_filter: list[str], filtered: bool) -> list[str]:
    """Sanitizer options for the confirmer's control: its writer unchecked, its readers checked (`kernel_filter`:
    the user's include filters; `filtered`: whether any filter of theirs leaves kernels unchecked)."""
    options = [f"--kernel-name-exclude=kns={HIDDEN_WRITER}"]
    if kernel_filter:
        options.append(f"--kernel-name=kns={CHECKED_READERS}")
    if _tracks_filtered(version) and not filtered:  # hides the writer's writes; blind_spot_planted says why not more
        options += ["--initcheck-track-filtered-global-memory", "no"]
    return options


def early_params(probe_name: str, params: dict[str, Any]) -> dict[str, Any]:
    """What the early re-runs run: `params` less the cases that import torch (Probe.without_torch). Importing torch
    and setting up its CUDA state was about 2 s of each re-run of the 384-case grid on the H200, for cases that held
    no finding (docs/confirmation.md, "The cases that import torch"); a flagged case the early re-runs left out is
    re-run after the sanitizer run (confirm_findings)."""
    probe = registry.get(probe_name)
    try:
        model = probe.Params.model_validate(params)
    except ValueError:  # admission refuses such parameters; the re-runs would report the same
        return params
    cut = probe.without_torch(model)
    return params if cut is None else cut.model_dump(mode="json")


def narrowed_params(probe: Probe[Any], params: dict[str, Any], cases: set[str]) -> dict[str, Any] | None:
    """`params` cut down to the cases `cases` need (Probe.narrowed), as the request's JSON; None where the probe
    cannot cut them or nothing would be left out."""
    try:
        model = probe.Params.model_validate(params)
    except ValueError:
        return None
    cut = probe.narrowed(model, cases)
    if cut is None:
        return None
    narrowed: dict[str, Any] = cut.model_dump(mode="json")
    return narrowed if narrowed != model.model_dump(mode="json") else None
