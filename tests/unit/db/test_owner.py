"""Whether a running sweep's process has certainly ended: by pid and boot, and by when the pid's process started, so
that a container restarted without the host rebooting (small pids reused at once) does not keep a killed sweep's
row running for ever."""

from __future__ import annotations

import os

from service.db.owner import gone, this_process


def test_this_process_is_not_gone() -> None:
    me = this_process()
    assert isinstance(me["started"], int) and gone(me) is None


def test_a_pid_that_now_names_another_process_is_gone() -> None:
    reused = {**this_process(), "started": this_process()["started"] - 1}  # the pid's earlier owner
    why = gone(reused)
    assert why is not None and why.endswith("that pid is now another process's") and f"pid {os.getpid()}" in why


def test_an_owner_recorded_without_its_start_is_judged_by_pid_alone() -> None:
    earlier = {k: v for k, v in this_process().items() if k != "started"}  # stored before the start was recorded
    assert gone(earlier) is None
    assert gone({**this_process(), "host": "elsewhere"}) is None  # another host's: nothing can be known here
