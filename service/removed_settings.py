"""Settings that no longer exist, each with what took its place: one still set is refused, never ignored."""

from __future__ import annotations

import os
from collections.abc import Mapping

# Variable -> what replaced it. Each was a switch between ways of running that the measurements settled, or a
# value that now follows from another setting.
REMOVED: dict[str, str] = {
    "CUPROBE_CONFIRM_IDLE": "nothing: the confirmation's re-runs run at nice 10 (SCHED_IDLE made no sweep faster)",
    "CUPROBE_CONFIRM_FLAGGED_ONLY": "nothing: the re-runs always run every case (re-running only the flagged ones "
    "after the run made sweeps slower)",
    "CUPROBE_CONFIRM_HOLD": "nothing: a sweep's ready re-runs get their cases at once (holding them made sweeps "
    "slower)",
    "CUPROBE_CONFIRM_TORCH_EARLY": "nothing: the early re-runs leave out the cases that import torch, and a "
    "flagged one is re-run after the run",
    "CUPROBE_CUDA_SCHEDULE": "nothing: probe processes leave the GPU wait to the driver (blocking and yield "
    "stalled sweeps)",
    "CUPROBE_SKIP_DEMANGLING": "the run's backtrace: runs without host frames skip the demangler; ask for host "
    "frames (--show-backtrace host, CUPROBE_SHOW_BACKTRACE) to keep it",
    "CUPROBE_QUICK_EXIT": "nothing: a probe process exits quickly wherever the sanitizer reports nothing at teardown",
    "CUPROBE_TORCH_PREFETCH": "nothing: sanitizer runs of probes that use torch always import it on a second thread",
    "CUPROBE_BYTECODE_CACHE": "nothing: probe processes always keep their bytecode in cuprobe's cache "
    "(CUPROBE_CACHE_DIR)",
    "CUPROBE_CONFIRM_EARLY": "nothing: the re-runs start beside the sanitizer run wherever the probe allows",
    "CUPROBE_CONFIRM_NICE": "nothing: the re-runs run at nice 10",
    "CUPROBE_CONFIRM_SHARED": "nothing: a sweep's batches of one grid always share one set of re-runs",
    "CUPROBE_PARSE_IN_CHILDREN": "nothing: a local sweep past one slot parses in child processes, anything else "
    "where it runs",
    "CUPROBE_PARSE_SLOTS": "nothing: a local sweep's K says how many of its runs parse at once",
    "CUPROBE_FORK_PARSERS": "nothing: a local sweep always forks its parsers from one server",
    "CUPROBE_TASK_TIME_LIMIT_S": "CUPROBE_TASK_SOFT_TIME_LIMIT_S: the hard limit is the soft one plus a thirtieth "
    "(at least 5 s)",
    "CUPROBE_WORKER_TTL_S": "CUPROBE_WORKER_BEAT_S: a worker's registry heartbeat lives six beats",
}


class RemovedSetting(ValueError):
    """A removed CUPROBE_* variable is set: the message names each and what replaced it."""


def removed_in(environ: Mapping[str, str]) -> list[str]:
    """The removed variables `environ` sets (names compared as the settings read them, case-insensitively)."""
    names = {name.upper() for name in environ}
    return sorted(name for name in REMOVED if name in names)


def refuse_removed(environ: Mapping[str, str] | None = None) -> None:
    """RemovedSetting where `environ` (this process's by default) sets a removed variable."""
    found = removed_in(os.environ if environ is None else environ)
    if found:
        lines = "; ".join(f"{name} (replaced by {REMOVED[name]})" for name in found)
        raise RemovedSetting(f"unset the removed setting(s): {lines}")
