"""One set of the confirmation's bare re-runs for a sweep's batches of one grid, instead of one set per batch.

A batch's sanitizer run is split K ways because the sanitizer's cost is per record, on the host. A bare re-run's cost
is mostly its start, and CUDA contexts created side by side on one GPU wait on each other: on the H200, 32 processes
that only create a context took 8.8 s side by side against 1.1 s alone, with the host mostly idle (docs/sweep.md).
So K batches, each with its own four re-runs, start 4K processes that wait on the driver, where four re-runs of the
whole grid (each case's inputs come from its own seed and n, so a case is the same case in either) do the same work
once. Each batch's findings are then decided from the shared runs' cases, exactly as from its own. A sweep through
the service shares one set per host among its jobs instead (confirm/host.py), grouped by the same `share_groups`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuprobe.probes import registry
from cuprobe.service.config import Settings
from cuprobe.service.models import ProbeRequest, Tool
from cuprobe.service.probing.confirm.decide import BareRun
from cuprobe.service.probing.confirm.policy import confirming, early_params
from cuprobe.service.probing.confirm.reruns import Reruns
from cuprobe.service.probing.confirm.warm import RerunPool


def _key(request: ProbeRequest, settings: Settings) -> tuple[str, str, bool] | None:
    """What requests must share to share re-runs (None: this one confirms with its own, or not at all)."""
    tool = request.tool or Tool.NONE
    if not confirming(request, tool, settings):
        return None
    return request.probe, tool.value, request.confirm is not False


@dataclass(frozen=True)
class ShareGroup:
    """Requests that can share one set of re-runs: their indexes, the first with the group's time limit (the members'
    limits added: one run of every case takes longer than one batch; none: the setting's), and the parameters of
    every case of the group (the probe's `merged`)."""

    members: list[int]
    lead: ProbeRequest
    merged: dict[str, Any]


def share_groups(requests: list[ProbeRequest], settings: Settings) -> list[ShareGroup]:
    """The groups of two or more `requests` of one probe and tool whose probe can merge their parameters (a sweep's
    batches of one grid, or its repeats of one process), where the confirmation is on and shared."""
    keyed: dict[tuple[str, str, bool], list[int]] = {}
    for index, request in enumerate(requests):
        key = _key(request, settings)
        if key is not None:
            keyed.setdefault(key, []).append(index)
    groups = []
    for members in keyed.values():
        if len(members) < 2:
            continue
        probe = registry.get(requests[members[0]].probe)
        try:
            batches = [probe.Params.model_validate(requests[i].params) for i in members]
        except ValueError:  # a batch admission will refuse: every batch keeps its own re-runs
            continue
        merged = probe.merged(batches)
        if merged is None:
            continue
        limits = [requests[i].timeout_s for i in members]
        timeout = None if None in limits else sum(t for t in limits if t is not None)
        lead = requests[members[0]].model_copy(update={"timeout_s": timeout})
        groups.append(ShareGroup(members, lead, merged.model_dump(mode="json")))
    return groups


class SharedReruns:
    """The early re-runs of each group of `requests` whose probe can merge their parameters (Probe.merged), started
    when the group's first run asks for them (`for_request`) and closed with `close`. A group of one keeps its own.
    `warm`: a pool of re-run processes the caller keeps ready (confirm/warm.py), taken where it holds one."""

    def __init__(
        self, requests: list[ProbeRequest], settings: Settings, workdir: Path, warm: RerunPool | None = None
    ) -> None:
        self._settings, self._workdir, self._warm = settings, workdir, warm
        self._lock = threading.Lock()
        self._group_of: dict[int, int] = {}  # request index -> its group's number
        self._plans: dict[int, tuple[ProbeRequest, dict[str, Any], int]] = {}  # group -> (request, params, members)
        self._started: dict[int, Reruns] = {}
        for number, group in enumerate(share_groups(requests, settings)):
            params = early_params(group.lead.probe, group.merged)
            self._plans[number] = (group.lead, params, len(group.members))
            self._group_of.update(dict.fromkeys(group.members, number))

    def merged_params(self, index: int) -> dict[str, Any] | None:
        """The parameters of the re-runs request `index` shares (every case of its group, less the cases that import
        torch: early_params), or None: it has its own."""
        return self._plans[self._group_of[index]][1] if index in self._group_of else None

    def for_request(self, index: int) -> SharedMember | None:
        """The re-runs request `index` shares (started now if it is its group's first), or None: it has its own."""
        with self._lock:
            if index not in self._group_of:
                return None
            number = self._group_of[index]
            if number not in self._started:
                lead, params, members = self._plans[number]
                folder = self._workdir / f"shared-confirm{number:03d}"
                reruns = Reruns(lead, params, None, self._settings, folder, warm=self._warm)
                reruns.shared_by = members
                self._started[number] = reruns
            return SharedMember(self._started[number])

    def close(self) -> None:
        with self._lock:
            for reruns in self._started.values():
                reruns.close()


class SharedMember:
    """One run's view of the re-runs its group shares (confirm.EarlyReruns)."""

    def __init__(self, reruns: Reruns) -> None:
        self._reruns = reruns

    @property
    def shared_by(self) -> int:
        return self._reruns.shared_by

    @property
    def where(self) -> str:
        return self._reruns.where

    @property
    def spent_s(self) -> float:
        return self._reruns.spent_s

    def results(self) -> dict[str, BareRun]:
        return self._reruns.results()

    def close(self) -> None:
        """Nothing to do: the group's owner (SharedReruns) closes its re-runs."""
