"""Whether a running sweep's process has certainly ended: by pid and boot, and by when the pid's process started, so
that a container restarted without the host rebooting (small pids reused at once) does not keep a killed sweep's
row running for ever."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from cuprobe.service.db.owner import gone, this_process


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


def test_another_hosts_process_is_gone_only_once_its_beat_has_been_silent_for_ten_minutes() -> None:
    elsewhere = {**this_process(), "host": "cpu-worker-7f9c", "pid": 12}
    now = datetime(2026, 12, 6, 3, 0, tzinfo=UTC)
    assert gone(elsewhere, now - timedelta(minutes=9, seconds=59), now) is None
    why = gone(elsewhere, now - timedelta(minutes=10), now)
    assert why == (
        "its process (pid 12 on cpu-worker-7f9c) has not been heard from for 10 min (since 2026-12-06 02:50 UTC): "
        "its host is gone or cannot reach the store"
    )
    assert gone(elsewhere, None, now) is None  # a row from before beats were written: nothing known from here


def test_this_hosts_process_is_judged_by_its_pid_not_its_beat() -> None:
    now = datetime.now(UTC)
    assert gone(this_process(), now - timedelta(hours=3), now) is None  # alive, whatever its beat says
