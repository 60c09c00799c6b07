"""Job submission: a JobSpec (a ProbeRequest plus where to queue it), validated and stored, then enqueued."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pydantic import Field, ValidationError

from probes import registry
from service.config import Settings
from service.db.store import Job, JobState, Store, utcnow
from service.models import ProbeRequest
from service.probing.runner import SUPPRESSIONS_NAME, BadRequest, suppressions_file
from service.queue.names import Lane, queue_for
from service.sanitizer.options import OptionRefused, check_options

COMMAND_PROBE = "command"
REPLAY_PROBE = "replay"
# Time the worker needs around a probe's own limit (start-up, parsing, storing) within its soft limit.
RUN_MARGIN_S = 30.0


class JobSpec(ProbeRequest):
    """A ProbeRequest plus the GPU architecture, lane and pick-up deadline of its job."""

    arch: str | None = Field(
        default=None, pattern=r"^sm[0-9]{2,3}[a-z]?$", description="GPU architecture, e.g. sm90"
    )
    lane: Lane = Field(default=Lane.GATE, description="gate (and interactive) or sweep")
    deadline_s: float | None = Field(
        default=None, gt=0, le=7 * 24 * 3600, description="seconds to wait for a worker"
    )
    suppressions: str | None = Field(
        default=None,
        pattern=SUPPRESSIONS_NAME.pattern,
        description="name of a suppressions file in the server's suppressions directory (never a path)",
    )

    def probe_request(self) -> ProbeRequest:
        return ProbeRequest.model_validate(self.model_dump(include=set(ProbeRequest.model_fields)))


class SubmissionError(ValueError):
    """A request the service refuses; `field` names the offending field, `status` the HTTP status."""

    def __init__(self, field: str, message: str, status: int = 422) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.status = status


def runs_user_code(params: dict[str, Any]) -> bool:
    """Whether replay parameters name the user's own program rather than the built-in example."""
    return bool(params.get("entry") or params.get("script"))


def check(spec: JobSpec, settings: Settings) -> JobSpec:
    """Validate against the probe registry and server limits; returns it with tool and params filled in."""
    if spec.probe == COMMAND_PROBE and not settings.command_probe_enabled:
        raise SubmissionError(
            "probe",
            "the command probe is disabled on this server (CUPROBE_COMMAND_PROBE_ENABLED)",
            status=403,
        )
    if spec.probe == REPLAY_PROBE and not settings.replay_probe_enabled and runs_user_code(spec.params):
        raise SubmissionError(
            "probe",
            "the replay probe runs the user's own program (entry or script), which is disabled on this server "
            "(CUPROBE_REPLAY_PROBE_ENABLED); its built-in example runs anywhere, and `cuprobe gate --local` "
            "runs your program on your own machine",
            status=403,
        )
    try:
        probe = registry.get(spec.probe)
    except registry.UnknownProbe as exc:
        raise SubmissionError("probe", str(exc)) from exc
    tool = spec.tool or probe.tools[0]
    if tool not in probe.tools:
        raise SubmissionError("tool", f"probe {spec.probe} runs under {', '.join(probe.tools)}, not {tool}")
    try:
        params = probe.Params.model_validate(spec.params)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise SubmissionError(f"params.{where}" if where else "params", error["msg"]) from exc
    refuse_nul(spec.params, "params")
    if spec.suppressions is not None:
        try:
            suppressions_file(spec.suppressions, trusted=False, settings=settings)
        except BadRequest as exc:
            raise SubmissionError("suppressions", str(exc).removeprefix("suppressions: ")) from exc
    try:
        check_options(spec.options, tool)
        if spec.options.suppressions:
            suppressions_file(spec.options.suppressions, trusted=False, settings=settings)
    except (OptionRefused, BadRequest) as exc:
        raise SubmissionError("options", str(exc).removeprefix("suppressions: ")) from exc
    limit = settings.task_soft_time_limit_s - min(RUN_MARGIN_S, settings.task_soft_time_limit_s / 4)
    if (spec.timeout_s or settings.timeout_s) > limit:
        raise SubmissionError("timeout_s", f"this server's job limit is {limit:.0f} s")
    return spec.model_copy(update={"tool": tool, "params": params.model_dump(mode="json")})


def refuse_nul(value: Any, where: str) -> None:
    """SubmissionError naming the first string under `value` that holds a NUL byte (argv cannot carry one)."""
    if isinstance(value, str) and "\x00" in value:
        raise SubmissionError(where, "a NUL byte is not allowed")
    if isinstance(value, dict):
        for key, item in value.items():
            refuse_nul(str(key), where)
            refuse_nul(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            refuse_nul(item, f"{where}.{index}")


def create(spec: JobSpec, store: Store, settings: Settings) -> Job:
    """Store a new queued job for a checked spec."""
    probe = registry.get(spec.probe)
    now = utcnow()
    job = Job(
        id=uuid.uuid4().hex,
        probe=spec.probe,
        tool=str(spec.tool),
        request=spec.model_dump(mode="json"),
        queue=queue_for(
            needs_gpu=probe.needs_gpu, arch=spec.arch or settings.default_gpu_arch, lane=spec.lane
        ),
        lane=spec.lane.value,
        state=JobState.QUEUED.value,
        message="queued",
        created_at=now,
        deadline_at=now + timedelta(seconds=spec.deadline_s or settings.queue_deadline_s),
        attempts=0,
        enqueues=0,
        cancel_requested=False,
    )
    return store.add_job(job)


def submit(spec: JobSpec, store: Store, settings: Settings, enqueue: Callable[[Job], Any]) -> Job:
    """Check, store, then enqueue; a job the broker did not take stays queued for the reconciler to resend."""
    job = create(check(spec, settings), store, settings)
    try:
        enqueue(job)
    except Exception:  # the store is the source of truth: reconcile() resends what Redis never got
        return job
    store.mark_enqueued(job.id)
    return store.get(job.id) or job
