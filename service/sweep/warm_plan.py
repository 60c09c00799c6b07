"""Which jobs of a sweep the service runs are followed by a later job like them, so a GPU worker readies a spare.

A spare serves a run with its exact sanitizer command (service/probing/spares.py `warm_key`): the same probe, tool,
options and backtraces, and the same start-up (torch or not), with other parameters. With `slots` jobs running at
once, the first `slots` jobs of such a group start cold, and each later one can take a spare that one of the
earlier ones readied: so the first n - slots of a group of n are marked. A group that fits in one wave marks none,
and a worker then starts no spare a sweep cannot use (spares started beside the runs they would follow slow them:
docs/sweep.md, "Warm starts").
"""

from __future__ import annotations

from collections import defaultdict

from cuprobe.service.models import ProbeRequest, Tool
from cuprobe.service.probing.admission import BadRequest, admit
from cuprobe.service.probing.spares import level_of


def warm_followed(requests: list[ProbeRequest], slots: int) -> set[int]:
    """The indexes of `requests` (in the order they are sent) that a later request like them follows beyond the
    first wave of `slots`."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, request in enumerate(requests):
        if (like := _like(request)) is not None:
            groups[like].append(index)
    marked: set[int] = set()
    for members in groups.values():
        marked.update(members[: max(0, len(members) - max(1, slots))])
    return marked


def _like(request: ProbeRequest) -> tuple[str, str] | None:
    """What a spare must share with `request` to serve it, as far as the sweep can tell; None where runs like it
    never start warm (bare runs, probes that run the user's program) or it would not be admitted."""
    if request.tool in (None, Tool.NONE):
        return None
    try:
        admitted = admit(request.probe, request.tool, request.params, request.options)
    except BadRequest:
        return None
    if not admitted.probe.warms:
        return None
    return request.model_dump_json(exclude={"params"}), level_of(admitted.probe, admitted.model)
