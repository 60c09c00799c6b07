"""The confirmation's four bare re-runs in fewer processes (Settings.confirm_processes): each process runs its
re-runs one after another (`python -m cuprobe.probes ... --then POISON=FILE`), and the findings come out as with four.

The sanitizer run and its re-runs are played back (tests/unit/probing/bare_replay.py)."""

from __future__ import annotations

import itertools
import sys
import threading
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.models import Confirmation, Outcome, ProbeRequest, RunResult
from cuprobe.service.models.confirm_share import ConfirmShare
from cuprobe.service.probing.confirm.decide import POISON_RUNS
from cuprobe.service.probing.confirm.host import join
from cuprobe.service.probing.confirm.reruns import Reruns, dealt
from cuprobe.service.probing.runner import run_probe
from tests.conftest import RUNS, replaying
from tests.unit.probing.bare_replay import REQUEST, bare_log, consequential, replay_bare


def _poisons(entry: dict[str, object]) -> list[str]:
    """The poisons one stand-in process ran, in order: --poison, then each --then."""
    args = entry["args"]
    assert isinstance(args, list)
    thens = [str(value).partition("=")[0] for flag, value in itertools.pairwise(args) if flag == "--then"]
    return [str(args[args.index("--poison") + 1]), *thens]


def _evidence(result: RunResult) -> list[tuple[object, ...]]:
    """What each finding's confirmation decided and compared, without the re-runs' wall time."""
    return [
        (f.signature, f.case, f.confirmation, *(f.confirmation_evidence.model_dump(exclude={"bare_runs_s"}).values()))
        for f in result.findings
        if f.confirmation_evidence is not None
    ]


def test_dealing_keeps_the_two_0xff_runs_in_different_processes_wherever_there_are_two() -> None:
    assert dealt(POISON_RUNS, 4) == [[run] for run in POISON_RUNS]
    assert dealt(POISON_RUNS, 2) == [[("ff#1", "ff"), ("zero", "zero")], [("ff#2", "ff"), ("sentinel", "sentinel")]]
    assert dealt(POISON_RUNS, 3) == [[("ff#1", "ff"), ("sentinel", "sentinel")], [("ff#2", "ff")], [("zero", "zero")]]
    assert dealt(POISON_RUNS, 1) == [list(POISON_RUNS)]
    assert dealt((("sentinel", "sentinel"),), 2) == [[("sentinel", "sentinel")]]  # never more processes than runs


@pytest.mark.parametrize(
    ("processes", "expected"), [(2, [["ff", "zero"], ["ff", "sentinel"]]), (1, [["ff", "ff", "zero", "sentinel"]])]
)
def test_fewer_processes_confirm_as_four_do(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    replay_settings: Settings,
    processes: int,
    expected: list[list[str]],
) -> None:
    results = {}
    for count in (4, processes):
        (tmp_path / str(count)).mkdir()
        log, settings = replay_bare(monkeypatch, tmp_path / str(count), replay_settings)
        settings = settings.model_copy(update={"confirm_processes": count})
        results[count] = run_probe(REQUEST, workdir=tmp_path / str(count) / "run", settings=settings)
        ran = bare_log(log)
        assert len(ran) == min(count, 4)
        if count == processes:
            assert sorted(_poisons(entry) for entry in ran) == sorted(expected)
    four, fewer = results[4], results[processes]
    for result in (four, fewer):
        assert result.outcome is Outcome.FINDINGS, result.message
        assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}
        assert all(check["ok"] for check in result.confirmation_control), result.confirmation_control
    assert _evidence(fewer) == _evidence(four) and _evidence(four)
    assert [(c["case"], c["got"]) for c in fewer.confirmation_control] == [
        (c["case"], c["got"]) for c in four.confirmation_control
    ]
    # Every re-run has its own folder, as with four: its result, its arrays, and its process's logs.
    for label, _ in POISON_RUNS:
        folder = tmp_path / str(processes) / "run" / "confirm" / label.replace("#", "-")
        files = {path.name for path in folder.iterdir()}
        assert {"result.json", "result.json.poison.npz", "stdout.txt", "stderr.txt"} <= files


def test_a_rerun_after_one_that_failed_in_its_process_says_it_was_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings
) -> None:
    # No GPU here: the real bare re-run exits 69 (pycuda missing), so the re-run after it in its process never starts.
    replaying(monkeypatch, RUNS / "uninit-read-initcheck-2026.4.0.0", target=False)
    settings = replay_settings.model_copy(update={"confirm_processes": 2})
    result = run_probe(ProbeRequest(probe="uninit-read"), workdir=tmp_path, settings=settings)
    (finding,) = result.findings
    assert finding.confirmation is Confirmation.UNCONFIRMED and finding.confirmation_evidence is not None
    reason = finding.confirmation_evidence.reason
    assert reason.startswith("the bare re-run ff#1 (poison 0xFF) did not complete: exited 69") and "pycuda" in reason
    for label in ("zero", "sentinel"):
        stderr = (tmp_path / "confirm" / label / "stderr.txt").read_text()
        assert "pycuda is not installed" in stderr  # its process's log, in its own folder
        assert not (tmp_path / "confirm" / label / "result.json").exists()
    assert "the bare re-runs could not run" in result.message


def test_the_reruns_a_failed_one_left_unmade_say_so(tmp_path: Path, replay_settings: Settings) -> None:
    # The real interpreter and no GPU: each process's first re-run exits 69 (pycuda missing), the second never starts.
    settings = replay_settings.model_copy(update={"confirm_processes": 2, "python": sys.executable})
    runs = Reruns(ProbeRequest(probe="uninit-read"), {}, None, settings, tmp_path).results()
    assert list(runs) == [label for label, _ in POISON_RUNS]
    assert runs["ff#1"].message.startswith("exited 69") and "pycuda" in runs["ff#1"].message
    assert runs["zero"].message.startswith("not run: ff#1, before it in its process, did not complete (exited 69")
    assert runs["sentinel"].message.startswith("not run: ff#2, before it in its process, did not complete (exited 69")
    assert not any(run.ok for run in runs.values())


def test_two_jobs_of_one_grid_on_one_host_share_two_processes_by_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, replay_settings: Settings
) -> None:
    log, settings = replay_bare(monkeypatch, tmp_path, replay_settings)
    settings = settings.model_copy(update={"confirm_processes": Settings().confirm_processes, "data_dir": tmp_path})
    assert settings.confirm_processes == 2
    ticket = ConfirmShare(key="sweep1-0", params=REQUEST.params, members=2)
    results = []
    for job in range(2):
        shared = join(REQUEST, ticket, settings, threading.Event(), tmp_path / "job")
        assert shared is not None
        try:
            results.append(run_probe(REQUEST, workdir=tmp_path / f"job{job}", settings=settings, shared=shared))
        finally:
            shared.close()
    for result in results:
        assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}, result.message
        assert all(check["ok"] for check in result.confirmation_control) and "on this host" in result.message
    assert sorted(_poisons(entry) for entry in bare_log(log)) == [["ff", "sentinel"], ["ff", "zero"]]
