"""A scheduled sweep whose process ended says on its dashboard page that it waits to be resumed (not failed, not
silently running), and once resumed and stored, how it was resumed; `cuprobe sweep show` says the same."""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta
from pathlib import Path

from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from cuprobe.service.config import Settings
from cuprobe.service.db.owner import this_process
from cuprobe.service.db.store import Store, utcnow
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.db.tables import SweepRow
from cuprobe.service.models.sweep import Sweep
from tests.unit.web.conftest import client


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_a_sweep_waiting_to_be_resumed_and_one_resumed_say_so(tmp_path: Path, broker: str) -> None:
    settings = Settings(broker_url=broker, data_dir=tmp_path)
    store = Store(settings.database)
    store.migrate()
    sweeps = SweepStore(store)
    sweeps.start("orphan01", "nightly", {"path": "/defs/nightly.toml", "slots": 4})
    ended = subprocess.Popen(["true"])
    ended.wait()
    with store.session() as s:
        row = s.get(SweepRow, "orphan01")
        assert row is not None
        row.summary = {**row.summary, "owner": {**this_process(), "pid": ended.pid}}
    ui = client(settings)

    waiting = _text(ui.get("/ui/sweeps/orphan01").text)
    assert "running" in waiting and "waiting to be resumed from its jobs by a CPU worker" in waiting
    assert f"pid {ended.pid}" in waiting

    message = "resumed after its process (pid 7) ended: 4 job(s) it had sent taken back, 0 sent now"
    done = Sweep(id="orphan01", definition="nightly", state="done", started_at=utcnow(), message=message)
    sweeps.save(done)
    assert message in _text(ui.get("/ui/sweeps/orphan01").text)
    shown = CliRunner().invoke(app, ["sweep", "show", "orphan01"], env={"CUPROBE_DATA_DIR": str(tmp_path)})
    assert shown.exit_code == 0 and f"Note: {message}" in " ".join(shown.stdout.split()), shown.stdout


def test_a_running_sweeps_page_says_when_its_process_was_last_heard_from(tmp_path: Path, broker: str) -> None:
    settings = Settings(broker_url=broker, data_dir=tmp_path)
    store = Store(settings.database)
    store.migrate()
    SweepStore(store).start("live0001", "nightly", {"path": "/defs/nightly.toml", "slots": 4})
    with store.session() as s:  # its process, on another host, wrote its beat 3 minutes ago
        row = s.get(SweepRow, "live0001")
        assert row is not None
        row.summary = {**row.summary, "owner": {**this_process(), "host": "cpu-worker-7f9c", "pid": 12}}
        row.beat_at = utcnow() - timedelta(minutes=3)
    page = _text(client(settings).get("/ui/sweeps/live0001").text)
    assert "running" in page and "its process (pid 12 on cpu-worker-7f9c) last wrote that it runs 3 min ago" in page
    assert "waiting to be resumed" not in page  # three minutes is not silent
