"""The supervisor: output caps keep head and tail, limits kill the whole group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuprobe.service.sanitizer import supervise as supervise_module
from cuprobe.service.sanitizer.supervise import CappedStream, group_alive, supervise


def test_capped_stream_keeps_head_and_tail() -> None:
    stream = CappedStream(100)
    for i in range(1000):
        stream.feed(f"line {i}\n".encode())
    text = stream.text()
    assert text.startswith("line 0\n") and text.rstrip().endswith("line 999")
    assert "bytes omitted" in text and len(text) < 200
    assert stream.total == sum(len(f"line {i}\n") for i in range(1000))


def test_timeout_kills_grandchildren(tmp_path: Path) -> None:
    script = (
        "import subprocess,sys,time; subprocess.Popen([sys.executable,'-c','import time; time.sleep(600)']); "
        "time.sleep(600)"
    )
    done = supervise([sys.executable, "-c", script], timeout_s=1.0, max_output_bytes=1024)
    assert done.timed_out and done.duration_s < 8
    assert not group_alive(done.pgid)


def test_leftover_children_are_killed_after_normal_exit() -> None:
    script = "import subprocess,sys; subprocess.Popen([sys.executable,'-c','import time; time.sleep(600)'])"
    done = supervise([sys.executable, "-c", script], timeout_s=30, max_output_bytes=1024)
    assert done.returncode == 0 and not done.timed_out
    assert not group_alive(done.pgid)


def test_xml_growth_past_the_cap_stops_the_run(tmp_path: Path) -> None:
    xml = tmp_path / "run.xml"
    script = f"import time\nf=open({str(xml)!r},'wb')\nwhile True:\n f.write(b'x'*65536); f.flush(); time.sleep(0.01)"
    done = supervise(
        [sys.executable, "-c", script],
        timeout_s=30,
        max_output_bytes=1024,
        xml_path=xml,
        max_xml_bytes=500_000,
    )
    assert done.xml_capped and not done.timed_out and not group_alive(done.pgid)


def test_the_end_of_the_command_is_seen_when_it_exits_not_on_the_next_check(monkeypatch: pytest.MonkeyPatch) -> None:
    # The limit, XML size and cancel flag are checked every POLL_S; the exit itself wakes the supervisor at once.
    monkeypatch.setattr(supervise_module, "POLL_S", 60.0)
    done = supervise([sys.executable, "-c", "import time; time.sleep(0.5)"], timeout_s=300, max_output_bytes=1024)
    assert done.returncode == 0 and done.duration_s < 30
    assert 0 < done.spawned_s <= done.exited_s <= done.duration_s


def test_a_group_is_alive_while_a_member_runs_after_its_leader_was_reaped() -> None:
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess; subprocess.Popen(['sleep', '60'])"], start_new_session=True
    )
    leader.wait()
    try:
        assert group_alive(leader.pid)  # the sleep is still in the group
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while group_alive(leader.pid):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert not group_alive(leader.pid)


def _beating(beat: Path, beats: int, every_s: float, then_sleep_s: float) -> list[str]:
    script = (
        f"import time\nfor i in range({beats}):\n open({str(beat)!r},'w').write(f'{{i}} case c{{i}}\\n')"
        f"\n time.sleep({every_s})\ntime.sleep({then_sleep_s})"
    )
    return [sys.executable, "-c", script]


def test_the_watchdog_stops_a_run_whose_heartbeat_stopped(tmp_path: Path) -> None:
    beat = tmp_path / "heartbeat"
    done = supervise(
        _beating(beat, 3, 0.1, 600), timeout_s=120, max_output_bytes=1024, heartbeat=beat, stall_s=2.0
    )
    assert done.stalled_s is not None and done.stalled_s >= 2.0 and not done.timed_out
    assert done.last_beat == "2 case c2" and done.duration_s < 60
    assert not group_alive(done.pgid)


def test_the_watchdog_leaves_a_beating_run_and_one_that_never_beat(tmp_path: Path) -> None:
    beat = tmp_path / "heartbeat"
    # Beats every 0.2 s for 4 s, twice the allowed silence: progress all along.
    done = supervise(_beating(beat, 20, 0.2, 0), timeout_s=120, max_output_bytes=1024, heartbeat=beat, stall_s=2.0)
    assert done.returncode == 0 and done.stalled_s is None
    # Never beats (start-up is not judged): quiet for 3 s with a 1 s window, still not stopped.
    quiet = supervise(
        [sys.executable, "-c", "import time; time.sleep(3)"],
        timeout_s=120,
        max_output_bytes=1024,
        heartbeat=tmp_path / "never",
        stall_s=1.0,
    )
    assert quiet.returncode == 0 and quiet.stalled_s is None


def test_nice_lowers_the_commands_cpu_priority() -> None:
    report = [sys.executable, "-c", "import os; print(os.nice(0))"]
    plain = supervise(report, timeout_s=30, max_output_bytes=1024)
    lowered = supervise(report, timeout_s=30, max_output_bytes=1024, nice=7)
    assert int(plain.stdout.text()) == os.nice(0)
    assert int(lowered.stdout.text()) == min(19, os.nice(0) + 7)
