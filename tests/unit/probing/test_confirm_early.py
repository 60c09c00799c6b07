"""The confirmation's bare re-runs start beside the sanitizer run, not after it, and end with it when there is
nothing to confirm.

The sanitizer run and its re-runs are played back (tests/unit/probing/bare_replay.py)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from rich.console import Console

from cuprobe.contract import Tool
from cuprobe.probes import registry
from cuprobe.service.cli.render import print_result
from cuprobe.service.config import Settings
from cuprobe.service.models import Confirmation, Outcome, ProbeRequest
from cuprobe.service.probing.confirm import RerunPool
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.sweep.execute import LocalRunner
from tests.conftest import CAPTURES, replaying
from tests.unit.probing.bare_replay import REQUEST, bare_log, consequential, replay_bare


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, replay_settings: Settings) -> tuple[Path, Settings]:
    return replay_bare(monkeypatch, tmp_path, replay_settings)


def _watch(entry: dict[str, object]) -> str:
    args = entry["args"]
    assert isinstance(args, list)
    return str(args[args.index("--watch") + 1])


def test_the_reruns_start_before_the_sanitizer_run_ends_and_confirm_its_findings(
    bare: tuple[Path, Settings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log, settings = bare
    # The stand-in sanitizer finishes only once the four re-runs have started (or after 60 s).
    monkeypatch.setenv("CUPROBE_REPLAY_WAIT_BARE", "4")
    result = run_probe(REQUEST, workdir=tmp_path / "run", settings=settings)

    assert result.outcome is Outcome.FINDINGS, result.message
    assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}
    assert all(check["ok"] for check in result.confirmation_control), result.confirmation_control
    assert "started beside the sanitizer run" in result.message
    # The sanitizer counted 408 records: 24 of uninit-read's own and 384 of the confirmer's planted control.
    assert (result.records, result.control_records) == (408, 384)
    console = Console(record=True, width=200)
    print_result(result, console)
    assert "records 408 (384 of them the confirmer's planted control)" in console.export_text()
    runs = bare_log(log)
    ended = float((log / "sanitizer-ended").read_text())
    assert len(runs) == 4
    assert all(float(str(r["started"])) < ended for r in runs)
    # Below the sanitizer run's CPU priority, so they do not take its cores.
    assert {r["nice"] for r in runs} == {min(19, os.nice(0) + 10)}
    # Before the findings are known, the sentinel run snapshots every buffer.
    assert {_watch(r) for r in runs} == {"all"}


def test_a_probe_that_reruns_late_follows_the_run_and_watches_only_the_flagged_buffers(
    bare: tuple[Path, Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe whose re-runs cannot start early (Probe.reruns_early off: the command probe's)."""
    log, settings = bare
    monkeypatch.setattr(type(registry.get(REQUEST.probe)), "reruns_early", False)
    result = run_probe(REQUEST, workdir=tmp_path / "run", settings=settings)

    assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}
    assert "started beside" not in result.message
    runs = bare_log(log)
    ended = float((log / "sanitizer-ended").read_text())
    assert len(runs) == 4 and all(float(str(r["started"])) > ended for r in runs)
    sentinel = [r for r in runs if "sentinel" in r["args"]]  # type: ignore[operator]
    assert json.loads(_watch(sentinel[0])) == {
        "n=1024,k=1000": ["src"],
        "cuprobe-confirm-control/benign": ["src"],
        "cuprobe-confirm-control/blind-spot": ["src"],
        "cuprobe-confirm-control/consequential": ["src"],
    }


def test_an_early_sentinel_run_that_left_a_flagged_buffer_out_runs_again_watching_it(
    bare: tuple[Path, Settings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log, settings = bare
    monkeypatch.setenv("CUPROBE_REPLAY_BARE_DROP", "1")  # `--watch all` keeps no snapshot, as past its byte cap
    result = run_probe(REQUEST, workdir=tmp_path / "run", settings=settings)

    assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}
    assert all(check["ok"] for check in result.confirmation_control)
    # the log is named by process id, so its order says nothing about which sentinel run came first
    early, late = sorted((_watch(r) for r in bare_log(log) if "sentinel" in r["args"]), key=len)  # type: ignore[operator]
    assert early == "all" and "n=1024,k=1000" in json.loads(late)


def test_a_run_with_nothing_to_confirm_ends_its_early_reruns(
    bare: tuple[Path, Settings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log, settings = bare
    replaying(monkeypatch, CAPTURES / "2026.4.0.0" / "initcheck_ok", target=False)  # no records, no probe result
    monkeypatch.setenv("CUPROBE_REPLAY_WAIT_BARE", "4")
    monkeypatch.setenv("CUPROBE_REPLAY_BARE_SLEEP", "600")
    began = time.monotonic()
    # Time limit 400 s: re-runs left to end by themselves would hold the run up that long.
    result = run_probe(REQUEST, workdir=tmp_path / "run", settings=settings.model_copy(update={"timeout_s": 400}))

    assert time.monotonic() - began < 150  # not held up by the re-runs' 600 s
    assert not any(f.confirmation for f in result.findings)
    runs = bare_log(log)
    assert len(runs) == 4
    for run in runs:
        pid = int(str(run["pid"]))
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"bare re-run {pid} still running"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_the_probe_snapshots_every_buffer_with_watch_all_up_to_its_byte_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from cuprobe.probes import poison
    from cuprobe.probes.poison import PoisonLog, PoisonPlan

    monkeypatch.setattr(poison, "WATCH_ALL_MAX_BYTES", 24)
    log = PoisonLog(PoisonPlan(mode="sentinel", watch_all=True))
    log.checkpoint("a", "before k", x=lambda: np.zeros(4, np.float32), y=lambda: np.ones(2, np.float32))
    log.checkpoint("b", "before k", z=lambda: np.zeros(4, np.float32))
    assert {case: set(s) for case, s in log.snapshots.items()} == {"a": {"x", "y"}}
    assert log.snapshots_left_out == 1
    watched = PoisonLog(PoisonPlan(mode="sentinel", watch={"a": ["y"]}))
    watched.checkpoint("a", "before k", x=lambda: np.zeros(4, np.float32), y=lambda: np.ones(2, np.float32))
    assert set(watched.snapshots["a"]) == {"y"}


def test_which_cases_the_reruns_run_and_when(
    bare: tuple[Path, Settings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Four re-runs beside the run, of every case but the torch variant's (importing torch cost each re-run about 2 s
    on the H200).

    The sanitizer run is the H200's 39-case narrow-matmul capture; the stand-in's re-runs are uninit-read's recorded
    ones (no bare narrow-matmul run can be made without a GPU), so what is checked is when they started and what they
    were asked to run, not their verdicts. Their results hold uninit-read's case, none of the flagged ones: so after an
    early start, four more re-runs follow the run for exactly the flagged cases the early ones did not run, as they do
    for a flagged torch case the early ones left out."""
    log, settings = bare
    replaying(monkeypatch, CAPTURES / "2026.4.0.0" / "probe_narrow-matmul_initcheck", target=False)
    params = {"m": 32, "k": 32, "tile": 32, "n": [1, 2, 3, 4, 8, 31, 32, 33, 63, 64, 65, 127, 128],
              "variants": ["unguarded", "guarded", "torch"]}  # fmt: skip
    request = ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, params=params)
    result = run_probe(request, workdir=tmp_path / "run", settings=settings)

    flagged = sorted({f.case for f in result.findings if f.case and f.tool is Tool.INITCHECK})
    assert flagged == [f"unguarded-n{n}" for n in (1, 127, 2, 3, 31, 33, 4, 63, 65, 8)]
    ended = float((log / "sanitizer-ended").read_text())
    runs = bare_log(log)
    before = [json.loads(str(r["args"][r["args"].index("--params") + 1])) for r in runs if r["started"] < ended]  # type: ignore[operator,union-attr]
    after = [json.loads(str(r["args"][r["args"].index("--params") + 1])) for r in runs if r["started"] >= ended]  # type: ignore[operator,union-attr]
    flagged_cases = {"n": [1, 2, 3, 4, 8, 31, 33, 63, 65, 127], "variants": ["unguarded"]}
    variants = ["unguarded", "guarded"]
    assert len(before) == 4 and all(a["n"] == params["n"] and a["variants"] == variants for a in before)
    assert len(after) == 4
    assert all({k: a[k] for k in flagged_cases} == flagged_cases for a in after)
    # Every flagged case was decided from re-runs asked for it; the stand-in's hold none of them, and say so.
    reasons = {f.confirmation_evidence.reason for f in result.findings if f.case in flagged and f.confirmation_evidence}
    assert reasons and all("took no snapshot" in r for r in reasons), reasons


def test_a_sweeps_processes_of_one_grid_share_one_set_of_reruns(bare: tuple[Path, Settings], tmp_path: Path) -> None:
    """A local sweep's processes of one grid (here two repeats of one process) decide their findings from one set of
    four re-runs started beside them, not four each; processes whose cases the probe cannot merge keep their own."""
    log, settings = bare
    got = dict(LocalRunner(tmp_path / "shared", settings, slots=2).run_all([REQUEST, REQUEST]))

    assert sorted(got) == [0, 1]
    for result in got.values():
        assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}, result.message
        assert all(check["ok"] for check in result.confirmation_control)
        assert "one set for the sweep's 2 processes of this grid" in result.message
    assert len(bare_log(log)) == 4

    other = REQUEST.model_copy(update={"params": {**REQUEST.params, "block": 128}})  # not the same cases
    for entry in log.iterdir():
        entry.unlink()
    got = dict(LocalRunner(tmp_path / "own", settings, slots=2).run_all([REQUEST, other]))
    assert all(set(consequential(r.findings)) == {Confirmation.CONSEQUENTIAL} for r in got.values())
    assert not any("one set for the sweep" in r.message for r in got.values())
    assert len(bare_log(log)) == 8


def test_a_sweep_takes_the_reruns_a_pool_kept_ready_before_it_started(
    bare: tuple[Path, Settings], tmp_path: Path
) -> None:
    """A pool of warm re-runs (service/probing/confirm/warm.py), prepared and ready before the sweep: its four
    processes run the shared re-runs — handed the grid's parameters through their FIFOs after the sweep began — and
    no other re-run process starts (here each held back 0.3 s first: `after_s`). One that died before the sweep is
    replaced by a cold start, not waited for."""
    log, settings = bare
    pool = RerunPool(tmp_path / "pool", settings, after_s=0.3)
    pool.prepare(REQUEST.probe)
    assert pool.wait_ready(60) == 4
    began = time.time()
    try:
        got = dict(LocalRunner(tmp_path / "sweep", settings, slots=2, reruns=pool).run_all([REQUEST, REQUEST]))
    finally:
        pool.close()

    runs = bare_log(log)
    assert len(runs) == 4 and pool.taken == 4
    assert all(float(str(r["started"])) < began < began + 0.3 <= float(str(r["handed"])) for r in runs)
    assert all(json.loads(str(r["args"][r["args"].index("--params") + 1]))["n"] == 1024 for r in runs)  # type: ignore[union-attr]
    for result in got.values():
        assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}, result.message
        assert all(check["ok"] for check in result.confirmation_control)
        assert "4 of them in processes ready before it" in result.message

    for entry in log.iterdir():
        entry.unlink()
    pool = RerunPool(tmp_path / "pool2", settings)
    pool.prepare(REQUEST.probe)
    assert pool.wait_ready(60) == 4
    dead = pool.take(REQUEST.probe, "zero")
    assert dead is not None
    dead.started.kill()
    pool._held.append(dead)  # held but dead: the re-run that asks for it starts cold
    try:
        got = dict(LocalRunner(tmp_path / "sweep2", settings, slots=2, reruns=pool).run_all([REQUEST, REQUEST]))
    finally:
        pool.close()
    runs = bare_log(log)
    assert sorted(r["handed"] is None for r in runs) == [False, False, False, True]
    assert all("3 of them in processes ready before it" in r.message for r in got.values())
    assert all(set(consequential(r.findings)) == {Confirmation.CONSEQUENTIAL} for r in got.values())
