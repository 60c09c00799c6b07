"""`cuprobe sweep` given definitions or paths it cannot use: exit 2 naming the problem before anything runs or is
stored; an interrupted sweep stops its probes and is stored as failed; a failed sweep never reads as a result."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cuprobe.service.cli.main import app
from cuprobe.service.db.store import Store
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.models.sweep import Sweep
from tests.processes import as_terminal_foreground, processes_mentioning

REPO = Path(__file__).resolve().parents[3]


def _cli(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"CUPROBE_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "250"})


def _run(tmp_path: Path, definition: str, *args: str) -> Result:
    path = tmp_path / "sweep.toml"
    path.write_text(definition)
    return _cli(tmp_path, "sweep", "run", str(path), *args)


def _stored(tmp_path: Path) -> int:
    if not (tmp_path / "data").exists():
        return 0
    store = Store(f"sqlite:///{tmp_path / 'data' / 'cuprobe.db'}")
    store.migrate()
    return len(SweepStore(store).list())


def _entry(grid: str, probe: str = "selftest", extra: str = "") -> str:
    return f'name = "bad"\n[[entry]]\nprobe = "{probe}"\ntool = "none"\ngrid = {grid}\n{extra}'


@pytest.mark.parametrize(
    ("definition", "says"),
    [
        (_entry('{ behaviour = ["violate", "violate"] }'), "grid axis behaviour gives 'violate' twice"),
        (_entry("{ behaviour = [] }"), "grid axis behaviour has no values"),
        (_entry("{ seconds = { first = 5, last = 1 } }"), "last (1) is before first (5)"),
        (_entry("{ seed = { first = 0, last = 1000000 } }", "gradcheck"), "1,000,001 cases"),
        (
            'name = "bad"\n[[entry]]\nprobe = "selftest"\ntool = ["none", "none"]\n',
            "tool none is given twice",
        ),
        (
            _entry('{ n = { first = 0, last = 3 }, variants = ["unguarded"] }', "narrow-matmul").replace(
                'tool = "none"', 'tool = "initcheck"'
            ),
            "entry narrow-matmul:",
        ),
        (_entry('{ behaviour = ["[/x] and [bold]loud"] }'), "'[/x] and [bold]loud' is not one of"),
        ('name = "bad"\n[[entry]]\nname = "a/b<c>"\nprobe = "selftest"\ntool = "none"\n', "name"),
        (
            _entry('{ behaviour = ["pass", "violate"] }', extra='params = { behaviour = "pass" }\n'),
            "behaviour is both a fixed parameter (params) and a grid axis",
        ),
    ],
)
def test_a_definition_that_cannot_run_is_refused_before_anything_is_stored(
    tmp_path: Path, definition: str, says: str
) -> None:
    began = time.monotonic()
    result = _run(tmp_path, definition)
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and says in said and "Traceback" not in said, said
    assert _stored(tmp_path) == 0
    assert time.monotonic() - began < 30  # refused, not planned for minutes


def test_a_definition_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_bytes(b"\xff\xfename = 'x'\n")
    result = _cli(tmp_path, "sweep", "run", str(path))
    assert result.exit_code == 2 and "not UTF-8 text" in result.output, result.output


def test_paths_it_cannot_write_are_refused(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    ok = _entry('{ behaviour = ["ok"] }')
    result = _run(tmp_path, ok, "--report", str(tmp_path / "afile"))
    assert result.exit_code == 2 and "is a file" in result.output and _stored(tmp_path) == 0
    ran = _run(tmp_path, ok)
    assert ran.exit_code == 0, ran.output
    sweep_id = _cli(tmp_path, "sweep", "show", "--json").output
    listed = json.loads(sweep_id)
    assert [s["state"] for s in listed] == ["done"]
    shown = _cli(tmp_path, "sweep", "show", listed[0]["id"], "--html", str(tmp_path / "no" / "dir" / "r.html"))
    assert shown.exit_code == 2 and "name a file in a folder that exists" in shown.output
    # A folder that cannot be made (under a file; under /proc) is refused before anything runs or is stored.
    for where in (tmp_path / "afile" / "sub", Path("/proc/cuprobe-report")):
        refused = _run(tmp_path, ok, "--report", str(where))
        assert refused.exit_code == 2 and f"--report {where}:" in " ".join(refused.output.split()), refused.output
        assert "Traceback" not in refused.output
    assert len(json.loads(_cli(tmp_path, "sweep", "show", "--json").output)) == 1
    # A file that fails only when written (/dev/full) is said, no traceback, and exit 2 rather than a pass.
    full = _cli(tmp_path, "sweep", "show", listed[0]["id"], "--html", "/dev/full")
    assert full.exit_code == 2 and "not written: No space left on device" in full.output, full.output


def test_a_webhook_url_that_is_not_one_is_refused_before_running(tmp_path: Path) -> None:
    """A malformed CUPROBE_SWEEP_WEBHOOK_URL was a traceback after the sweep was stored, its summary unprinted."""
    env = {"CUPROBE_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "250", "CUPROBE_SWEEP_WEBHOOK_URL": "http://[::1"}
    (tmp_path / "sweep.toml").write_text(_entry('{ behaviour = ["ok"] }'))
    result = CliRunner().invoke(app, ["sweep", "run", str(tmp_path / "sweep.toml")], env=env)
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "CUPROBE_SWEEP_WEBHOOK_URL: 'http://[::1' is not a URL" in said, said
    assert _stored(tmp_path) == 0


def test_a_failed_sweep_says_so_and_is_not_shown_as_a_result(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    store = Store(f"sqlite:///{tmp_path / 'data' / 'cuprobe.db'}")
    store.migrate()
    sweeps = SweepStore(store)
    sweeps.start("f00d0001", "nightly")
    sweeps.fail("f00d0001", "KeyboardInterrupt: ")
    shown = _cli(tmp_path, "sweep", "show", "f00d")
    assert shown.exit_code == 0 and "**This sweep is failed, not a result**: KeyboardInterrupt" in shown.output
    diffed = _cli(tmp_path, "sweep", "diff", "f00d")
    assert diffed.exit_code == 3 and "sweep f00d0001 is failed, not a result: there is nothing to diff" in diffed.output


@pytest.mark.parametrize("stored", [52, 3])
def test_the_list_of_sweeps_says_when_it_shows_only_the_newest(tmp_path: Path, stored: int) -> None:
    (tmp_path / "data").mkdir()
    store = Store(f"sqlite:///{tmp_path / 'data' / 'cuprobe.db'}")
    store.migrate()
    sweeps = SweepStore(store)
    for i in range(stored):
        sweeps.start(f"f00d{i:04d}", "nightly")
    listed = _cli(tmp_path, "sweep", "show", "--json")
    assert listed.exit_code == 0 and len(json.loads(listed.stdout)) == min(stored, 50)
    said = "the 50 newest of 52 sweeps; `cuprobe sweep show ID` shows any of them"
    assert (said in listed.stderr) == (stored > 50)


def _slow_sweep(tmp_path: Path, last: int, **popen: Any) -> subprocess.Popen[str]:
    """`cuprobe sweep run` of cases sleeping 60 s, 61 s ... `last` s, one at a time, in a process of its own."""
    path = tmp_path / "slow.toml"
    grid = f"{{ seconds = {{ first = 60, last = {last} }} }}"
    path.write_text(_entry(grid, extra='params = { behaviour = "sleep" }\n'))
    env = {**os.environ, "CUPROBE_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "cuprobe.service.cli", "sweep", "run", str(path), "--slots", "1"]
    return subprocess.Popen(command, env=env, cwd=tmp_path, **popen)


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_sweep_stops_its_probes_and_is_stored_as_failed(tmp_path: Path, sent: signal.Signals) -> None:
    """Twenty 60 s cases, one at a time: the sweep must end within seconds of the signal, not after them all."""
    proc = _slow_sweep(
        tmp_path, 79, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=as_terminal_foreground,
    )
    try:
        deadline = time.monotonic() + 120
        while not processes_mentioning('"seconds": 60'):  # the first probe is running
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.2)
        proc.send_signal(sent)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, out
    assert "stored as failed" in out
    assert not processes_mentioning('"seconds": 6') and not processes_mentioning('"seconds": 7')
    store = Store(f"sqlite:///{tmp_path / 'data' / 'cuprobe.db'}")
    (row,) = SweepStore(store).list()
    assert row.state == "failed"
    assert row.summary["message"].startswith("interrupted (Ctrl-C or SIGTERM) after 0 finished process(es)")


def test_a_killed_sweep_reads_as_failed_with_why_not_as_running(tmp_path: Path) -> None:
    """SIGKILL gives a sweep no chance to store that it stopped: the next read finds its process gone (same host,
    same boot, no such pid) and stores it as failed, saying so; it never reads as running again."""
    proc = _slow_sweep(tmp_path, 61, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not processes_mentioning('"seconds": 60'):  # the first probe is running: the sweep is stored
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        listed = _cli(tmp_path, "sweep", "show", "--json")
        assert [s["state"] for s in json.loads(listed.stdout)] == ["running"]  # the control: alive, it runs
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything of its group still there
    listed = _cli(tmp_path, "sweep", "show", "--json")
    (sweep,) = json.loads(listed.stdout)
    assert sweep["state"] == "failed"
    shown = _cli(tmp_path, "sweep", "show", sweep["id"])
    said = f"**This sweep is failed, not a result**: interrupted: its process (pid {proc.pid} on "
    assert said in shown.output and "ended without finishing it" in shown.output, shown.output
    diffed = _cli(tmp_path, "sweep", "diff", sweep["id"])
    assert diffed.exit_code == 3 and "is failed, not a result" in diffed.output


def test_diff_against_says_on_stderr_what_the_comparison_may_not_mean(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    store = Store(f"sqlite:///{tmp_path / 'data' / 'cuprobe.db'}")
    store.migrate()
    sweeps = SweepStore(store)
    stored = [("aaaa0001", "nightly"), ("bbbb0002", "nightly"), ("cccc0003", "gpu2")]
    for i, (sweep_id, definition) in enumerate(stored):
        started = datetime(2026, 12, 1, 3, i, tzinfo=UTC)
        sweeps.save(Sweep(id=sweep_id, definition=definition, state="done", started_at=started, finished_at=started))
    same = _cli(tmp_path, "sweep", "diff", "bbbb0002", "--against", "aaaa0001", "--json")  # the control: nothing to say
    assert same.exit_code == 0 and same.stderr == "" and json.loads(same.stdout)["previous"] == "aaaa0001"
    other = _cli(tmp_path, "sweep", "diff", "bbbb0002", "--against", "cccc0003", "--json")
    assert "--against cccc0003 is a sweep of 'gpu2', not 'nightly'" in other.stderr
    assert "--against cccc0003 started after bbbb0002" in other.stderr
    assert json.loads(other.stdout)["previous"] == "cccc0003"  # stdout stays the JSON
    itself = _cli(tmp_path, "sweep", "diff", "bbbb0002", "--against", "bbbb0002")
    assert "is the sweep itself: nothing can have changed" in itself.stderr
