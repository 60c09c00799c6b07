"""A sweep run again under its label takes back the jobs it already submitted: a resumed scheduled sweep waits for
the jobs its ended process sent instead of sending them again (service/sweep/scheduled.py)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.queue.submit import JobSpec, check
from cuprobe.service.queue.waiting import ended

log = logging.getLogger(__name__)

# A sweep's jobs are found by label; more than this many under one label is not a sweep this service made.
MAX_LABELLED = 100_000


def sweep_label(sweep_id: str) -> str:
    """The label every job of a scheduled sweep carries."""
    return f"sweep:{sweep_id}"


# Fields that say how a job is run, not what it runs: a resumed sweep planned for other slots marks other jobs
# `warm_next`, and a job sent before the field existed stored none.
HINTS = ("warm_next",)


def _same(request: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in request.items() if k not in HINTS}, sort_keys=True, default=str)


@dataclass
class Labelled:
    """What a label's stored jobs give a run: `found` (slot -> job id) for the requests a job already asked for,
    and `dropped`, the label's other jobs (no request of this run asks for them any more), cancelled."""

    found: dict[int, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)


def labelled(store: Store, label: str, specs: list[JobSpec], settings: Settings) -> Labelled:
    """Match the label's stored jobs to `specs`, each job to at most one spec, by the request the job stored (the
    spec as submission checked it: the tool and defaults filled in). A spec submission would refuse now matches
    none (submitting it again reports why). Jobs left over are cancelled: the sweep, planned again, has no place
    for their results (its definition or this server's settings changed since they were sent)."""
    stored: dict[str, list[str]] = {}
    jobs = sorted(store.jobs(label=label, limit=MAX_LABELLED), key=lambda j: (j.created_at, j.id))
    if not jobs:  # a sweep's first run: nothing to take back, and submission checks each spec itself
        return Labelled()
    for job in jobs:
        stored.setdefault(_same(job.request), []).append(job.id)
    out = Labelled()
    for slot, spec in enumerate(specs):
        try:
            key = _same(check(spec, settings).model_dump(mode="json"))
        except BadRequest:
            continue
        if stored.get(key):
            out.found[slot] = stored[key].pop(0)
    left = {job_id for ids in stored.values() for job_id in ids}
    for job in jobs:
        if job.id in left and not ended(job.state):
            store.cancel(job.id)
            out.dropped.append(job.id)
    if out.dropped:
        log.warning("%s: %d job(s) no longer planned, cancelled: %s", label, len(out.dropped), out.dropped[:5])
    return out
