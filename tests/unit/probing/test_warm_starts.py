"""Warm starts: a spare process, started under the sanitizer before its run was known, runs that run exactly as a
fresh process would — same outcome, findings and artifacts — and anything wrong with a spare sends the run back to
a cold start, never to a wrong result.

The sanitizer is the replay stand-in: with the target running (the real selftest probe, which gets ready and then
reads its parameters from the FIFO, as on the GPU), or replaying a real H200 narrow-matmul capture once its
parameters came.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest, RunResult
from cuprobe.service.models.options import SanitizerOptions
from cuprobe.service.models.sweep import Sweep
from cuprobe.service.probing.runner import PlannedRun, plan_run, run_probe, start_spare
from cuprobe.service.probing.spares import FIFO_NAME, Spare, Spares, warm_key
from cuprobe.service.reports.html import html
from cuprobe.service.sanitizer.supervise import start
from cuprobe.service.sweep.definition import parse_definition
from cuprobe.service.sweep.execute import LocalRunner, requests_of, run_sweep
from cuprobe.service.sweep.plan import plan
from tests.conftest import VERSIONS, capture, replaying


@pytest.fixture
def spares(tmp_path: Path) -> Iterator[Spares]:
    pool = Spares(tmp_path / "spares", size=2)
    yield pool
    pool.close()


@pytest.fixture
def running_target(monkeypatch: pytest.MonkeyPatch) -> None:
    replaying(monkeypatch, capture(VERSIONS[1], "initcheck_ok"), target=True)


def _selftest(behaviour: str = "ok", **params: object) -> ProbeRequest:
    return ProbeRequest(
        probe="selftest", tool=Tool.INITCHECK, params={"behaviour": behaviour, **params}, timeout_s=60
    )


def _run(request: ProbeRequest, where: Path, settings: Settings, spares: Spares | None) -> RunResult:
    return run_probe(request, workdir=where, settings=settings, spares=spares)


def _ready(spares: Spares, count: int = 1) -> None:
    assert spares.wait_ready(count, 60) >= count, "the spare never got ready"


def test_a_run_handed_to_a_spare_gets_its_own_parameters_and_files(
    tmp_path: Path, running_target: None, replay_settings: Settings, spares: Spares
) -> None:
    first = _run(_selftest(), tmp_path / "first", replay_settings, spares)
    assert first.outcome is Outcome.CLEAN and not first.warm_start  # nothing was ready yet
    _ready(spares)
    # The spare was started for an `ok` run; this one asks the probe to break its expectation: the finding shows
    # the parameters reached the waiting target.
    second = _run(_selftest("violate"), tmp_path / "second", replay_settings, spares)
    assert second.warm_start and second.probe_context["warm_start"]["waited_s"] > 0
    assert second.outcome is Outcome.FINDINGS
    assert [f.kind for f in second.findings] == ["expectation-violation"]
    assert second.params["behaviour"] == "violate"
    assert "--params" in second.command and "--params-from" not in second.command  # the command that reproduces it
    files = sorted(p.name for p in (tmp_path / "second").iterdir())
    assert {"result.json", "run.xml", "stdout.txt", "stderr.txt", "exit_code"} <= set(files)
    assert FIFO_NAME not in files and "ready" not in files
    assert second.timing["spawn"] == 0.0 and "hand_over" in second.timing
    assert spares.taken == 1


WARM_SWEEP = """
name = "warm"
repeats = 3
[[entry]]
probe = "narrow-matmul"
tool = ["initcheck"]
params = {m = 32, k = 32, tile = 32}
grid = {n = [1, 2, 3, 4, 8, 31, 32, 33, 63, 64, 65, 127, 128], variants = ["unguarded", "guarded", "torch"]}
"""


def test_a_warm_start_replays_the_same_findings_as_a_cold_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings
) -> None:
    # The 39-case narrow-matmul batch captured on the H200, three times by one slot: once with every run cold, once
    # with a spare ready before the sweep starts (and more asked for as it goes). Parsed, attributed and
    # classified alike.
    replaying(monkeypatch, capture(VERSIONS[1], "probe_narrow-matmul_initcheck"), target=False)
    definition = parse_definition(WARM_SWEEP)
    replay_settings = replay_settings.model_copy(update={"confirm": False})  # bare re-runs need a GPU
    cold_settings = replay_settings.model_copy(update={"warm_starts": False})
    cold = run_sweep(definition, LocalRunner(tmp_path / "cold", cold_settings, slots=1))
    pool = Spares(tmp_path / "spares", size=1, budget=2)
    try:
        request = requests_of(plan(definition))[0][1]
        pool.ask(partial(start_spare, request, replay_settings, False, pool.root), lambda: True)
        assert pool.wait_ready(1, 60) == 1
        warm = run_sweep(definition, LocalRunner(tmp_path / "warm", replay_settings, slots=1, spares=pool))
    finally:
        pool.close()
    assert cold.processes[0].warm == [False] * 3 and warm.processes[0].warm[0] is True
    # where each run's time went, per stage: what bench/sweep.py shows of a sweep's slowest process
    assert all({"run", "parse"} <= set(stages) for stages in cold.processes[0].stages)
    assert len(cold.processes[0].stages) == len(warm.processes[0].stages) == 3  # one per run
    for sweep in (cold, warm):
        (process,) = sweep.processes
        assert process.outcomes == [Outcome.FINDINGS] * 3 and process.control_fired == [True] * 3
        assert sum(c.records for c in sweep.cases) == 6624 and not any(c.flaky for c in sweep.cases)
    assert _seen(cold) == _seen(warm)
    shown = " ".join("yes" if w else "no" for w in warm.processes[0].warm)  # starts with "yes": the primed run
    assert "<th>warm start</th>" in html(warm, None) and f"<td>{shown}</td>" in html(warm, None)


def _seen(sweep: Sweep) -> list[tuple[object, ...]]:
    return [(c.key, c.outcome, c.records, [f.model_dump() for f in c.findings]) for c in sweep.cases]


def test_without_warm_starts_every_run_starts_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings
) -> None:
    replaying(monkeypatch, capture(VERSIONS[1], "initcheck_ok"), target=True)
    settings = replay_settings.model_copy(update={"warm_starts": False})
    got = dict(LocalRunner(tmp_path, settings, slots=1).run_all([_selftest()] * 3))
    assert [got[i].warm_start for i in range(3)] == [False] * 3
    assert not (tmp_path / "spares").exists()


def test_a_spare_that_died_waiting_sends_the_run_to_a_cold_start(
    tmp_path: Path, running_target: None, replay_settings: Settings, spares: Spares
) -> None:
    _run(_selftest(), tmp_path / "first", replay_settings, spares)
    _ready(spares)
    (spare,) = spares._ready
    os.killpg(spare.started.pgid, signal.SIGKILL)
    spare.started.proc.wait()
    second = _run(_selftest("violate"), tmp_path / "second", replay_settings, spares)
    assert not second.warm_start and second.outcome is Outcome.FINDINGS
    assert second.timing["spawn"] > 0  # a process of its own


def test_a_spare_hung_in_its_warm_up_costs_the_run_its_time_limit_not_more(
    tmp_path: Path, running_target: None, replay_settings: Settings, spares: Spares
) -> None:
    request = _selftest().model_copy(update={"timeout_s": 3})
    # A spare for exactly this run whose target never gets to its FIFO (a warm-up that hangs).
    spares.ask(partial(_hung_spare, request, replay_settings, tmp_path / "hung"), lambda: True)
    deadline = time.monotonic() + 60
    while not spares._ready and time.monotonic() < deadline:
        time.sleep(0.05)
    assert spares._ready, "the hung spare was never started"
    began = time.monotonic()
    second = _run(request, tmp_path / "second", replay_settings, spares)
    assert time.monotonic() - began < 30
    assert second.outcome is Outcome.CLEAN and not second.warm_start  # it gave up on the spare and ran cold
    # After the run's own time limit, which counts from before its folder was prepared: prepare + hand_over (each
    # rounded to 0.1 ms; hand_over alone came to 2.9999 s on a loaded CI machine).
    assert second.timing["prepare"] + second.timing["hand_over"] >= 3 - 0.001


def _hung_spare(request: ProbeRequest, settings: Settings, folder: Path) -> Spare:
    folder.mkdir(parents=True)
    planned = plan_run(request, workdir=folder, settings=settings)
    assert isinstance(planned, PlannedRun)
    key = warm_key(planned)
    assert key is not None
    os.mkfifo(folder / FIFO_NAME)
    return Spare(key, planned, folder / FIFO_NAME, start(["sleep", "600"], max_output_bytes=1024))


def test_a_spare_serves_only_runs_with_its_exact_sanitizer_command(
    tmp_path: Path, running_target: None, replay_settings: Settings, spares: Spares
) -> None:
    _run(_selftest(), tmp_path / "first", replay_settings, spares)
    _ready(spares)
    other = _selftest().model_copy(update={"options": SanitizerOptions(check_api_memory_access=False)})
    result = _run(other, tmp_path / "other", replay_settings, spares)
    assert not result.warm_start and spares.taken == 0


def test_closing_the_pool_ends_every_spare(tmp_path: Path, running_target: None, replay_settings: Settings) -> None:
    pool = Spares(tmp_path / "spares", size=3)
    _run(_selftest(), tmp_path / "run", replay_settings, pool)
    pool.ask(_maker(replay_settings, pool), lambda: True)
    assert pool.wait_ready(2, 60) == 2
    pids = [s.started.proc.pid for s in pool._ready]
    pool.close()
    assert all(_gone(pid) for pid in pids)
    assert list((tmp_path / "spares").iterdir()) == []


def _maker(settings: Settings, pool: Spares) -> Callable[[], Spare | None]:
    return partial(start_spare, _selftest(), settings, False, pool.root)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False

