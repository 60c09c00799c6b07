"""A scheduled sweep whose process ended: its row waits (running, saying why) instead of reading as failed, one
process adopts it, and run again under its label it takes back the jobs it had sent instead of sending them again.
The whole path against a real worker and Redis: tests/integration/test_sweep_resume.py."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.db.owner import this_process
from cuprobe.service.db.store import Job, Store, utcnow
from cuprobe.service.db.sweeps import SweepStore
from cuprobe.service.db.tables import SweepRow, as_utc
from cuprobe.service.models import ProbeRequest, RunResult, Tool
from cuprobe.service.queue.submit import submit
from cuprobe.service.sweep.adopt import labelled, sweep_label
from cuprobe.service.sweep.definition import parse_definition
from cuprobe.service.sweep.execute import LocalRunner, ServiceRunner, requests_of, run_sweep
from cuprobe.service.sweep.plan import plan
from cuprobe.service.sweep.scheduled import run_and_store
from tests.unit.sweep.test_sweep_webhook import Hook

GRID = (
    'name = "resumable"\n[[entry]]\nprobe = "selftest"\ntool = "none"\nrepeats = 2\n'
    'grid = { behaviour = ["ok", "violate"] }\n'
)


def _setup(tmp_path: Path) -> tuple[Settings, Store]:
    settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'c.db'}")
    store = Store(settings.database)
    store.migrate()
    return settings, store


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _orphan(store: Store, sweep_id: str) -> None:
    """Make the sweep's owner a process of this host that has ended (as a killed CPU worker's pool child)."""
    with store.session() as s:
        row = s.get(SweepRow, sweep_id)
        assert row is not None
        row.summary = {**row.summary, "owner": {**this_process(), "pid": _dead_pid()}}


def _three(tmp_path: Path, first: str, third: str) -> tuple[Store, SweepStore]:
    """A store with three running sweeps of one definition: `first` and `third` scheduled (resumable), "local" a
    `cuprobe sweep run` (not)."""
    _, store = _setup(tmp_path)
    sweeps = SweepStore(store)
    sweeps.start(first, "nightly", {"path": "/defs/nightly.toml", "slots": 4})
    sweeps.start("local", "nightly")
    sweeps.start(third, "nightly", {"path": "/defs/nightly.toml", "slots": 4})
    return store, sweeps


def test_a_labelled_run_takes_back_each_job_it_sent_once_and_cancels_those_no_longer_planned(tmp_path: Path) -> None:
    settings, store = _setup(tmp_path)
    sent: list[Job] = []
    runner = ServiceRunner(store, settings, sent.append, label=sweep_label("a" * 32))
    requests = [r for _, r in requests_of(plan(parse_definition(GRID), 1))]
    specs = runner.specs(requests)
    assert len(specs) == 4 and all(spec.label == "sweep:" + "a" * 32 for spec in specs)  # 2 cases x 2 repeats
    # The ended process had sent three of the four (one repeat of one case twice, as the plan has it).
    first = [submit(spec, store, settings, sent.append).id for spec in specs[:3]]
    # ...and a job that the definition, edited since, no longer plans.
    stale = specs[0].model_copy(update={"params": {**specs[0].params, "seconds": 5.0}})
    dropped = submit(stale, store, settings, sent.append).id

    again = labelled(store, runner.label or "", runner.specs(requests), settings)
    assert again.found == {0: first[0], 1: first[1], 2: first[2]}  # slot 3 (the second repeat) was never sent
    assert again.dropped == [dropped]
    job = store.get(dropped)
    assert job is not None and job.state == "cancelled"
    # Another label's jobs are not this sweep's.
    assert labelled(store, sweep_label("b" * 32), specs, settings).found == {}


def test_a_labelled_runner_gives_a_grid_the_same_ticket_when_the_sweep_is_planned_again(tmp_path: Path) -> None:
    """A resumed sweep's jobs sent now join the re-runs its earlier jobs share on their host (one ticket key)."""
    settings, store = _setup(tmp_path)
    narrow = {"m": 32, "k": 32, "tile": 32, "variants": ["unguarded", "guarded"]}
    requests = [
        ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, params={**narrow, "n": n}) for n in ([1, 2], [3, 4])
    ]
    first = ServiceRunner(store, settings, print, label="sweep:x").specs(requests)
    again = ServiceRunner(store, settings, print, label="sweep:x").specs(requests)
    assert first[0].confirm_share is not None and first[0].confirm_share.members == 2
    assert [s.model_dump() for s in first] == [s.model_dump() for s in again]
    other = ServiceRunner(store, settings, print, label="sweep:y").specs(requests)[0].confirm_share
    unlabelled = ServiceRunner(store, settings, print).specs(requests)[0].confirm_share
    assert other is not None and unlabelled is not None
    assert len({first[0].confirm_share.key, other.key, unlabelled.key}) == 3


def test_a_sweep_whose_process_ended_waits_to_be_resumed_only_if_it_can_be(tmp_path: Path) -> None:
    store, sweeps = _three(tmp_path, "resumable", "alive")
    sweeps.progress("resumable", 1, 8, "selftest/none (1 case(s))")  # progress keeps what a resume needs
    _orphan(store, "resumable")
    _orphan(store, "local")

    assert sweeps.orphans() == ["resumable"]
    rows = {row.id: row for row in sweeps.list()}  # a read path: reaps
    assert rows["local"].state == "failed" and rows["local"].summary["message"].startswith("interrupted: its process")
    assert rows["resumable"].state == "running" and rows["alive"].state == "running"
    assert rows["resumable"].summary["message"].startswith("waiting to be resumed from its jobs by a CPU worker")

    adopted = sweeps.adopt("resumable")
    assert adopted is not None and adopted.times == 1 and adopted.resume == {"path": "/defs/nightly.toml", "slots": 4}
    assert "ended without finishing it" in adopted.why and adopted.definition == "nightly"
    assert sweeps.orphans() == [] and sweeps.adopt("resumable") is None  # this process owns it now
    assert sweeps.adopt("alive") is None and sweeps.adopt("local") is None
    row = sweeps.row("resumable")
    assert row is not None and row.state == "running" and "message" not in row.summary

    _orphan(store, "resumable")  # ended again: the count goes on
    again = sweeps.adopt("resumable")
    assert again is not None and again.times == 2


def test_a_resumed_sweeps_wall_time_counts_from_when_it_began(tmp_path: Path) -> None:
    settings, store = _setup(tmp_path)
    definition = parse_definition('name = "w"\n[[entry]]\nprobe = "uninit-read"\ntool = "initcheck"\n')
    runner = ServiceRunner(store, settings, print, poll_s=0.05, served=lambda: {"cpu"})
    began = utcnow() - timedelta(minutes=10)
    sweep = run_sweep(definition, runner, started=began)
    assert sweep.started_at == began and sweep.wall_s is not None and 600 <= sweep.wall_s < 660


def test_a_sweep_no_cpu_worker_resumes_within_a_day_is_stored_failed(tmp_path: Path) -> None:
    _, store = _setup(tmp_path)
    sweeps = SweepStore(store)
    sweeps.start("forgotten", "nightly", {"path": "/defs/nightly.toml", "slots": 4})
    _orphan(store, "forgotten")
    assert sweeps.reap() == []  # waits: a CPU worker's next maintenance pass resumes it
    waiting = sweeps.row("forgotten")
    assert waiting is not None and waiting.state == "running" and "orphaned_at" in waiting.summary
    with store.session() as s:  # a day later, no worker of its host came back
        row = s.get(SweepRow, "forgotten")
        assert row is not None
        row.summary = {**row.summary, "orphaned_at": (utcnow() - timedelta(hours=25)).isoformat()}
    assert sweeps.reap() == ["forgotten"]
    failed = sweeps.row("forgotten")
    assert failed is not None and failed.state == "failed"
    assert failed.summary["message"].endswith("; no CPU worker resumed it within 24 h"), failed.summary["message"]
    assert sweeps.orphans() == []


def _moved(store: Store, sweep_id: str, silent: timedelta) -> None:
    """Make the sweep's owner a process on another host (a CPU worker whose container was recreated under a new
    name) that last wrote its beat `silent` ago."""
    with store.session() as s:
        row = s.get(SweepRow, sweep_id)
        assert row is not None
        row.summary = {**row.summary, "owner": {**this_process(), "host": "cpu-worker-7f9c", "pid": 12}}
        row.beat_at = utcnow() - silent


def test_a_sweep_whose_host_went_away_is_resumed_from_any_host_once_its_beat_is_silent(tmp_path: Path) -> None:
    store, sweeps = _three(tmp_path, "moved", "beating")
    _moved(store, "moved", timedelta(minutes=11))
    _moved(store, "local", timedelta(hours=2))
    _moved(store, "beating", timedelta(minutes=2))  # another host's live sweep: its beat is recent

    assert sweeps.orphans() == ["moved"]
    rows = {row.id: row for row in sweeps.list()}  # a read path: reaps
    assert rows["beating"].state == "running" and "message" not in rows["beating"].summary
    assert rows["moved"].state == "running"
    waiting = "waiting to be resumed from its jobs by a CPU worker: its process"
    assert rows["moved"].summary["message"].startswith(waiting)
    local = rows["local"]
    assert local.state == "failed", local.summary
    assert local.summary["message"].startswith("interrupted: its process (pid 12 on cpu-worker-7f9c) has not been")
    assert "120 min" in local.summary["message"]

    adopted = sweeps.adopt("moved")
    assert adopted is not None and "has not been heard from for 11 min" in adopted.why
    row = sweeps.row("moved")
    assert row is not None and row.beat_at is not None and utcnow() - as_utc(row.beat_at) < timedelta(minutes=1)
    assert sweeps.orphans() == []  # this process owns it now, and has just beaten


def test_a_running_sweep_beats_until_its_block_ends_or_it_is_no_longer_its_own(tmp_path: Path) -> None:
    _, store = _setup(tmp_path)
    sweeps = SweepStore(store)
    sweeps.start("s", "nightly", {"path": "/defs/nightly.toml", "slots": 4})

    def beat_at() -> datetime:
        row = sweeps.row("s")
        assert row is not None and row.beat_at is not None
        return as_utc(row.beat_at)

    first = beat_at()
    with sweeps.beating("s", every=0.02):
        deadline = time.monotonic() + 30
        while beat_at() == first and time.monotonic() < deadline:
            time.sleep(0.02)
        assert beat_at() > first
    after = beat_at()
    time.sleep(0.1)
    assert beat_at() == after  # the block ended: no more beats

    _moved(store, "s", timedelta(minutes=30))  # adopted by another process meanwhile
    assert sweeps.beat("s") is False
    assert beat_at() < utcnow() - timedelta(minutes=29)


class _AdoptedMeanwhile:
    """A local runner whose sweep another process adopts while it runs (this one not heard from for too long)."""

    def __init__(self, inner: LocalRunner, store: Store, sweep_id: str) -> None:
        self.inner, self.store, self.sweep_id, self.slots = inner, store, sweep_id, inner.slots

    def run_all(self, requests: list[ProbeRequest]) -> Iterator[tuple[int, RunResult]]:
        _moved(self.store, self.sweep_id, timedelta(0))
        yield from self.inner.run_all(requests)


def test_a_sweep_another_process_resumed_meanwhile_is_stored_and_told_once_by_that_one(tmp_path: Path) -> None:
    hook = Hook()
    try:
        settings, store = _setup(tmp_path)
        settings = settings.model_copy(update={"sweep_webhook_url": hook.url})
        definition = tmp_path / "resumable.toml"
        definition.write_text(GRID)
        runner = _AdoptedMeanwhile(LocalRunner(tmp_path / "runs", settings, slots=1), store, "s" * 32)

        sweep = run_and_store(definition, store, settings, runner, sweep_id="s" * 32)
        assert sweep.state == "done" and len(sweep.cases) == 2  # it ran, but the sweep is not its own any more
        row = SweepStore(store).row("s" * 32)
        assert row is not None and row.state == "running"  # left to the process that adopted it
        assert hook.bodies == []
        # Its own sweep, same path: stored and told.
        own = run_and_store(definition, store, settings, LocalRunner(tmp_path / "own", settings, slots=1))
        stored = SweepStore(store).row(own.id)
        assert stored is not None and stored.state == "done" and len(hook.bodies) == 1
    finally:
        hook.server.shutdown()
