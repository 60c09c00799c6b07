"""The confirmation: an initcheck run's findings decided by re-running its cases bare with poisoned memory.

The runner calls `start_early` as a run starts (re-runs beside it) and `confirm_findings` once its findings are
parsed; admission asks `refuse_unconfirmable`; a sweep shares one set of re-runs among its batches (`SharedReruns`
here, `join` on a worker's host) and may keep warm ones ready (`RerunPool`). Inside, each module uses only those
below it: findings -> shared, host -> warm -> reruns -> policy -> decide (docs/confirmation.md).
"""

from cuprobe.service.probing.confirm.decide import POISON_RUNS, BareRun
from cuprobe.service.probing.confirm.findings import confirm_findings
from cuprobe.service.probing.confirm.host import join, misfit
from cuprobe.service.probing.confirm.policy import (
    confirming,
    control_options,
    refuse_unconfirmable,
    user_filters,
)
from cuprobe.service.probing.confirm.reruns import CONFIRM_DIR, LATE_DIR, EarlyReruns, start_early
from cuprobe.service.probing.confirm.shared import SharedReruns, share_groups
from cuprobe.service.probing.confirm.warm import RerunPool

__all__ = [
    "CONFIRM_DIR",
    "LATE_DIR",
    "POISON_RUNS",
    "BareRun",
    "EarlyReruns",
    "RerunPool",
    "SharedReruns",
    "confirm_findings",
    "confirming",
    "control_options",
    "join",
    "misfit",
    "refuse_unconfirmable",
    "share_groups",
    "start_early",
    "user_filters",
]
