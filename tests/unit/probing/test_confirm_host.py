"""A sweep's jobs of one grid share one set of the confirmation's re-runs on each host
(service/probing/confirm/host.py), and what goes wrong falls back to each job's own re-runs, never to a verdict from
runs it did not ask for.

The jobs' sanitizer runs and re-runs are played back (tests/unit/probing/bare_replay.py); the jobs run through the
worker's own path (execute_job) into SQLite, two at once in two threads as a GPU worker's pool processes would (each
opens the lock itself, so flock(2) sets them against each other as it would two processes)."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import ValidationError

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.models import Confirmation, Outcome, ProbeRequest, Tool
from cuprobe.service.models.confirm_share import ConfirmShare
from cuprobe.service.probing.admission import BadRequest
from cuprobe.service.probing.confirm.host import DONE, LOCK, OWNER, SHARE_DIR, join, share_folder
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.queue.submit import JobSpec, check, create
from cuprobe.service.sweep.execute import ServiceRunner
from cuprobe.service.worker.execute import execute_job
from tests.unit.probing.bare_replay import REQUEST, bare_log, consequential, replay_bare

TICKET = ConfirmShare(key="sweep1-0", params=REQUEST.params, members=2)


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, replay_settings: Settings) -> tuple[Path, Settings]:
    log, settings = replay_bare(monkeypatch, tmp_path, replay_settings)
    return log, settings.model_copy(update={"data_dir": tmp_path / "data"})


def test_two_jobs_of_one_grid_on_one_host_run_one_set_of_reruns(bare: tuple[Path, Settings], tmp_path: Path) -> None:
    log, settings = bare
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    spec = check(JobSpec.model_validate({**REQUEST.model_dump(), "confirm_share": TICKET}), settings)
    jobs = [create(spec, store, settings) for _ in range(2)]
    with ThreadPoolExecutor(2) as pool:
        ids = [job.id for job in jobs]
        reports = list(pool.map(lambda job_id: execute_job(job_id, store=store, settings=settings), ids))

    assert all(r.stored and r.outcome == Outcome.FINDINGS.value for r in reports), reports
    for job in jobs:
        done = store.get(job.id)
        assert done is not None and done.state == "done"
        assert "one set for the sweep's 2 processes of this grid on this host" in (done.message or ""), done.message
        assert set(consequential(store.findings(job.id))) == {Confirmation.CONSEQUENTIAL}
    assert len(bare_log(log)) == 4  # one set for both jobs, not four each
    assert not any((settings.data_dir / SHARE_DIR).iterdir())  # the last job out removed the group's folder


def test_a_job_that_starts_after_the_owner_finished_reads_its_runs(bare: tuple[Path, Settings], tmp_path: Path) -> None:
    log, settings = bare
    results = []
    for job in range(2):
        shared = join(REQUEST, TICKET, settings, threading.Event(), tmp_path / "job")
        assert shared is not None and shared.owns == (job == 0)
        try:
            results.append(run_probe(REQUEST, workdir=tmp_path / f"job{job}", settings=settings, shared=shared))
        finally:
            shared.close()
        folder = share_folder(settings, REQUEST, Tool.INITCHECK, TICKET)
        assert folder.exists() == (job == 0)  # kept until both jobs of the group are done with it

    for result in results:
        assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}, result.message
        assert all(check["ok"] for check in result.confirmation_control)
        assert "on this host" in result.message
    assert len(bare_log(log)) == 4


def test_the_others_wait_for_the_reruns_not_for_the_owners_whole_job(
    bare: tuple[Path, Settings], tmp_path: Path
) -> None:
    log, settings = bare
    owner = join(REQUEST, TICKET, settings, threading.Event(), tmp_path / "owner")
    assert owner is not None and owner.owns
    try:
        other = join(REQUEST, TICKET, settings, threading.Event(), tmp_path / "other")
        assert other is not None and not other.owns
        began = time.monotonic()
        # The owner's job is still running (it has not asked for its results): the other decides all the same.
        result = run_probe(REQUEST, workdir=tmp_path / "other", settings=settings, shared=other)
        other.close()
        assert time.monotonic() - began < 60  # not the 180 s a waiting job gives the owner before its own
        assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}, result.message
        assert "on this host" in result.message
    finally:
        owner.close()
    assert len(bare_log(log)) == 4


def test_when_the_owners_job_is_cancelled_the_others_run_their_own(
    bare: tuple[Path, Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, settings = bare
    stop = threading.Event()
    monkeypatch.setenv("CUPROBE_REPLAY_BARE_SLEEP", "600")  # the owner's re-runs are still running when it stops
    owner = join(REQUEST, TICKET, settings, stop, tmp_path / "owner")
    deadline = time.monotonic() + 60
    while len(bare_log(log)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(bare_log(log)) == 4
    monkeypatch.delenv("CUPROBE_REPLAY_BARE_SLEEP")
    other = join(REQUEST, TICKET, settings, threading.Event(), tmp_path / "other")
    assert owner is not None and owner.owns and other is not None and not other.owns
    stop.set()  # the owner's job is cancelled (or handed back by a stopping worker): its re-runs stop, no done.json
    owner.close()
    cancelled = time.time()
    result = run_probe(REQUEST, workdir=tmp_path / "other", settings=settings, shared=other)
    other.close()

    assert not (share_folder(settings, REQUEST, Tool.INITCHECK, TICKET) / DONE).exists()
    assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}, result.message
    assert all(check["ok"] for check in result.confirmation_control)
    assert "on this host" not in result.message  # decided from its own re-runs, which it says
    assert len([r for r in bare_log(log) if float(str(r["started"])) > cancelled]) == 4


def test_a_job_whose_owners_files_are_gone_runs_its_own(bare: tuple[Path, Settings], tmp_path: Path) -> None:
    log, settings = bare
    owner = join(REQUEST, TICKET, settings, threading.Event(), tmp_path / "owner")
    assert owner is not None and owner.owns
    owner.close()  # done.json written; one job of the two counted out
    folder = share_folder(settings, REQUEST, Tool.INITCHECK, TICKET)
    (folder / "runs" / "zero" / "result.json").unlink()  # a run done.json calls complete, no longer readable
    other = join(REQUEST, TICKET, settings, threading.Event(), tmp_path / "other")
    assert other is not None and not other.owns
    result = run_probe(REQUEST, workdir=tmp_path / "other", settings=settings, shared=other)
    other.close()

    assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}, result.message
    assert "on this host" not in result.message
    assert len(bare_log(log)) == 8  # the owner's four and the other job's own four
    assert (tmp_path / "other" / "confirm" / "zero" / "result.json").exists()  # in its own folder, not the group's


def test_a_job_after_an_owner_that_died_unfinished_runs_its_own(bare: tuple[Path, Settings], tmp_path: Path) -> None:
    _, settings = bare
    folder = share_folder(settings, REQUEST, Tool.INITCHECK, TICKET)
    folder.mkdir(parents=True)
    (folder / OWNER).write_text('{"pid": 1}')
    (folder / LOCK).touch()  # nobody holds it: the owner is gone, and it left no done.json
    assert join(REQUEST, TICKET, settings, threading.Event(), tmp_path / "job") is None


def test_a_new_owner_removes_group_folders_left_for_a_day(bare: tuple[Path, Settings], tmp_path: Path) -> None:
    _, settings = bare
    old = settings.data_dir / SHARE_DIR / "gone-0123"
    old.mkdir(parents=True)
    (old / LOCK).touch()
    day_ago = time.time() - 25 * 3600
    os.utime(old, (day_ago, day_ago))
    recent = settings.data_dir / SHARE_DIR / "recent-0123"
    recent.mkdir()
    shared = join(REQUEST, TICKET, settings, threading.Event(), tmp_path / "job")
    assert shared is not None and shared.owns
    shared.close()
    assert not old.exists() and recent.exists()


def test_no_ticket_or_no_confirmation_means_the_jobs_own_reruns(bare: tuple[Path, Settings], tmp_path: Path) -> None:
    _, settings = bare
    cancel = threading.Event()
    assert join(REQUEST, None, settings, cancel, tmp_path) is None
    assert join(REQUEST, TICKET, settings.model_copy(update={"confirm": False}), cancel, tmp_path) is None
    memcheck = REQUEST.model_copy(update={"tool": Tool.MEMCHECK})
    assert join(memcheck, TICKET, settings, cancel, tmp_path) is None


NARROW = {"m": 32, "k": 32, "tile": 32, "variants": ["unguarded", "guarded"]}


def test_submission_refuses_a_ticket_whose_grid_does_not_take_in_the_jobs_cases() -> None:
    settings = Settings()
    grid = ConfirmShare(key="s-0", params={**NARROW, "n": [1, 2, 3, 4]}, members=2)
    job = {"probe": "narrow-matmul", "tool": "initcheck", "params": {**NARROW, "n": [3, 4]}}
    checked = check(JobSpec.model_validate({**job, "confirm_share": grid}), settings)
    # Admitted as the job is: both carry the defaults initcheck fills in (the allocator), so the worker compares like
    # with like.
    assert checked.confirm_share is not None and checked.confirm_share.params == {**checked.params, "n": [1, 2, 3, 4]}
    assert checked.params["allocator"] == "caching-nvtx"

    outside = {**job, "params": {**NARROW, "n": [3, 5]}}
    with pytest.raises(BadRequest) as refused:
        check(JobSpec.model_validate({**outside, "confirm_share": grid}), settings)
    assert refused.value.field == "confirm_share" and "do not take in this job's cases" in refused.value.message
    other_m = {**job, "params": {**NARROW, "m": 64, "n": [3]}}  # the same case names, other cases
    with pytest.raises(BadRequest, match="confirm_share"):
        check(JobSpec.model_validate({**other_m, "confirm_share": grid}), settings)
    with pytest.raises(ValidationError, match="key"):  # the key names a folder: no paths
        JobSpec.model_validate({**job, "confirm_share": {**grid.model_dump(), "key": "../../etc"}})


def test_a_service_sweep_gives_the_jobs_of_one_grid_one_ticket(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    batches = [{**NARROW, "n": [1, 2]}, {**NARROW, "n": [3, 4]}]
    requests = [ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, params=p) for p in batches]
    requests.append(ProbeRequest(probe="uninit-read", tool=Tool.MEMCHECK, params=REQUEST.params))
    specs = ServiceRunner(store, Settings(), lambda job: None).specs(requests)

    first, second, memcheck = (spec.confirm_share for spec in specs)
    assert first is not None and first == second and first.members == 2
    assert first.params["n"] == [1, 2, 3, 4] and first.params["variants"] == NARROW["variants"]
    assert memcheck is None  # nothing to confirm
    again = ServiceRunner(store, Settings(), lambda job: None).specs(requests)[0].confirm_share
    assert again is not None and again.key != first.key  # each sweep its own group
    assert all(s.confirm_share is None for s in ServiceRunner(store, Settings(confirm=False), print).specs(requests))


def test_a_grid_that_admission_would_refuse_as_one_run_gets_no_ticket(tmp_path: Path) -> None:
    """Two batches of 300 widths each: their merged grid (600 widths) is past what one run admits (512), so the two
    jobs confirm with their own re-runs instead of a shared set no process could run."""
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    halves = [list(range(1, 301)), list(range(301, 601))]
    requests = [ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, params={**NARROW, "n": n}) for n in halves]
    specs = ServiceRunner(store, Settings(), lambda job: None).specs(requests)
    assert [spec.confirm_share for spec in specs] == [None, None]
    fitting = ServiceRunner(store, Settings(), lambda job: None).specs([r.model_copy() for r in requests[:1]] * 2)
    assert all(spec.confirm_share is not None for spec in fitting)  # the same batch twice merges within the limit


def test_a_job_run_again_counts_out_of_its_group_once(bare: tuple[Path, Settings], tmp_path: Path) -> None:
    _, settings = bare
    folder = share_folder(settings, REQUEST, Tool.INITCHECK, TICKET)
    kept = []
    for member in ("job-a", "job-a", "job-b"):  # job-a handed back by a stopping worker and run again
        shared = join(REQUEST, TICKET, settings, threading.Event(), tmp_path / member, member=member)
        assert shared is not None
        shared.close()
        kept.append(folder.exists())
    assert kept == [True, True, False]  # gone only once both members of the group are done
