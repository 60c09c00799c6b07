"""Job submission: a JobSpec (a ProbeRequest plus where to queue it), validated and stored, then enqueued."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pydantic import Field

from cuprobe.probes.command import CommandParams, refused_names
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Job, JobState, Store, utcnow
from cuprobe.service.models import ProbeRequest
from cuprobe.service.models.confirm_share import ConfirmShare
from cuprobe.service.models.queues import LABEL_PATTERN, Lane
from cuprobe.service.probing.admission import (
    COMMAND_PROBE,
    SUPPRESSIONS_NAME,
    BadRequest,
    admit,
    sanitizer_fields,
    suppressions_file,
)
from cuprobe.service.probing.confirm import misfit, refuse_unconfirmable
from cuprobe.service.probing.sandbox import runs_user_code
from cuprobe.service.queue.served import ServedQueues

log = logging.getLogger(__name__)
REPLAY_PROBE = "replay"
# Time the worker needs around a probe's own limit (start-up, parsing, storing) within its soft limit.
RUN_MARGIN_S = 30.0


class JobSpec(ProbeRequest):
    """A ProbeRequest plus the GPU architecture, lane and pick-up deadline of its job."""

    arch: str | None = Field(default=None, pattern=r"^sm[0-9]{2,3}[a-z]?$", description="GPU architecture, e.g. sm90")
    lane: Lane = Field(default=Lane.GATE, description="gate (and interactive) or sweep")
    deadline_s: float | None = Field(
        default=None,
        gt=0,
        le=7 * 24 * 3600,
        allow_inf_nan=False,
        strict=True,
        description="seconds to wait for a worker",
    )
    wait_for_worker: bool = Field(
        default=False,
        description="when no live worker serves the job's queue, wait for one (up to the deadline) instead of "
        "ending `unavailable` at once",
    )
    label: str | None = Field(
        default=None,
        pattern=LABEL_PATTERN,
        description="groups this job with others, e.g. the jobs of one gate run (`gate:SUITE:RUN`)",
    )
    suppressions: str | None = Field(
        default=None,
        pattern=SUPPRESSIONS_NAME.pattern,
        description="name of a suppressions file in the server's suppressions directory (never a path)",
    )

    confirm_share: ConfirmShare | None = Field(
        default=None,
        description="set by a sweep: the jobs of one grid share one set of the confirmation's re-runs on each host "
        "(its `params` must take in this job's cases)",
    )
    warm_next: bool = Field(
        default=False,
        description="set by a sweep: a later job of the sweep runs under the same sanitizer command; the GPU worker "
        "process that runs this one readies a spare process for it (a warm start)",
    )

    def probe_request(self) -> ProbeRequest:
        return ProbeRequest.model_validate(self.model_dump(include=set(ProbeRequest.model_fields)))


# The command probe runs programs as the user the workers run as: off unless the operator turns it on.
COMMAND_OFF = (
    "the command probe is off on this server: it runs programs as the user its workers run as. `cuprobe gate --local` "
    "runs your tests on this machine without a server; a `cuprobe up` of your own allows them when started with "
    "--command (only holders of its token, made for you alone, may submit); a shared server needs "
    "CUPROBE_COMMAND_ENABLED=1, CUPROBE_API_TOKEN and CUPROBE_COMMAND_ALLOWLIST on its API and workers"
)


def check(spec: JobSpec, settings: Settings) -> JobSpec:
    """Admit the spec and check it against server limits; returns it with tool and params filled in.
    BadRequest names the offending field."""
    if spec.probe == COMMAND_PROBE and not settings.command_enabled:
        raise BadRequest(
            "probe",
            COMMAND_OFF,
            status=403,
        )
    if spec.probe == REPLAY_PROBE and not settings.replay_probe_enabled and runs_user_code(spec.params):
        raise BadRequest(
            "probe",
            "the replay probe runs the user's own program or files (entry, script, cwd or triton_cache_dir), which "
            "is disabled on this server "
            "(CUPROBE_REPLAY_PROBE_ENABLED); its built-in example runs anywhere, and `cuprobe gate --local` "
            "runs your program on your own machine",
            status=403,
        )
    admitted = admit(spec.probe, spec.tool, spec.params, spec.options)
    if spec.probe == COMMAND_PROBE and (refused := refused_names(CommandParams.model_validate(admitted.params))):
        raise BadRequest(
            "params.env",
            f"a job may not set {', '.join(refused)} (the loader's and cuprobe's own variables), neither in `env` nor "
            "in `env_modifications`",
        )
    if spec.suppressions is not None:
        suppressions_file(spec.suppressions, trusted=False, settings=settings, field="suppressions")
    if spec.options.suppressions:
        suppressions_file(spec.options.suppressions, trusted=False, settings=settings)
    sanitizer_fields(spec, admitted.tool)
    refuse_unconfirmable(spec, admitted.tool, settings)
    share = spec.confirm_share
    if share is not None:  # admitted as the job is (the defaults its tool fills in), so that the two compare
        try:
            share = share.model_copy(update={"params": admit(spec.probe, admitted.tool, share.params).params})
        except BadRequest as exc:
            raise BadRequest("confirm_share", f"confirm_share's params: {exc.message}") from exc
        filled = spec.model_copy(update={"tool": admitted.tool, "params": admitted.params})
        if why := misfit(filled, share):
            raise BadRequest("confirm_share", f"confirm_share cannot serve this job: {why}")
    limit = settings.task_soft_time_limit_s - min(RUN_MARGIN_S, settings.task_soft_time_limit_s / 4)
    if (spec.timeout_s or settings.timeout_s) > limit:
        raise BadRequest("timeout_s", f"this server's job limit is {limit:.0f} s")
    return spec.model_copy(update={"tool": admitted.tool, "params": admitted.params, "confirm_share": share})


def create(spec: JobSpec, store: Store, settings: Settings) -> Job:
    """Store a new queued job for a checked spec, on the queue its admission names."""
    admitted = admit(spec.probe, spec.tool, spec.params, spec.options)
    now = utcnow()
    job = Job(
        id=uuid.uuid4().hex,
        probe=spec.probe,
        tool=str(spec.tool),
        request=spec.model_dump(mode="json"),
        queue=admitted.queue(spec.arch or settings.default_gpu_arch, spec.lane),
        lane=spec.lane.value,
        label=spec.label,
        state=JobState.QUEUED.value,
        message="queued",
        created_at=now,
        deadline_at=now + timedelta(seconds=spec.deadline_s or settings.queue_deadline_s),
        attempts=0,
        enqueues=0,
        cancel_requested=False,
    )
    return store.add_job(job)


def submit(
    spec: JobSpec,
    store: Store,
    settings: Settings,
    enqueue: Callable[[Job], Any],
    served: ServedQueues | None = None,
) -> Job:
    """Check, store, then enqueue; a job the broker did not take stays queued for the reconciler to resend.

    With `served` (the queues live workers serve), a job for a queue none serves is stored and ends
    `unavailable` at once, unless the request asks to wait for a worker.
    """
    job = create(check(spec, settings), store, settings)
    queues = None if spec.wait_for_worker or served is None else served()
    if queues is not None and job.queue not in queues and store.expire_unserved_now(job.id, queues):
        return store.get(job.id) or job
    try:
        enqueue(job)
    except Exception:  # the store is the source of truth: reconcile() resends what Redis never got
        log.warning("job %s is stored but the broker did not take it; the reconciler resends it", job.id, exc_info=True)
        return job
    store.mark_enqueued(job.id)
    return store.get(job.id) or job
