"""A stored sweep's diff as everyone shows it: against the previous sweep of its definition, and each case that
the previous sweep could not run against the last sweep in which it ran."""

from __future__ import annotations

from cuprobe.service.db.sweeps import SweepChanges, SweepStore
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.sweep.diff import SweepDiff, diff


class NotAResult(ValueError):
    """A sweep that failed or still runs: its cases are not a result, so there is nothing to diff."""


def changes(sweeps: SweepStore, sweep: Sweep | SweepChanges) -> SweepDiff:
    """The diff of `sweep` (stored or just saved) against the sweeps before it, read lean from the store;
    NotAResult for a sweep that is not done."""
    if sweep.state != "done":
        raise NotAResult(f"sweep {sweep.id} is {sweep.state}, not a result: there is nothing to diff")
    previous_id = sweeps.previous_id(sweep)
    previous = sweeps.for_diff(previous_id) if previous_id else None
    return diff(sweep, previous, sweeps.earlier_runs(sweep, previous))
