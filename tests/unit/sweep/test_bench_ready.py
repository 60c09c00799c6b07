"""bench/sweep.py's rows with spares ready: what is started before the clock, and in which order (the order its
ready re-runs are made in changes the sweep's speed on the GPU: docs/confirmation.md, "Re-runs ready before the
sweep"). The spares and the
re-runs are sanitizer and CUDA processes, which cannot exist here: stand-ins record what was asked of them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

import bench.sweep as bench
from cuprobe.probes.narrow_matmul import NarrowMatmul, NarrowMatmulParams
from cuprobe.service.config import Settings
from cuprobe.service.sweep.definition import parse_definition
from cuprobe.service.sweep.execute import requests_of
from cuprobe.service.sweep.plan import BATCHING, NEED_RECORDS, plan


class Events(list[str]):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Any] = []  # what each spare asked for was started for


def _stand_ins(monkeypatch: pytest.MonkeyPatch, events: Events) -> None:
    class Spares:
        def __init__(self, root: Path, slots: int) -> None:
            self.root, self.budget = root, 0

        def ask(self, make: Any, *_: Any) -> None:
            events.append("spare asked")
            events.requests.append(make.args[0])

        def wait_ready(self, slots: int, timeout_s: float) -> int:
            events.append("spares ready")
            return slots

        def close(self) -> None:
            events.append("spares closed")

    class Pool:
        def __init__(self, root: Path, settings: Settings, after_s: float) -> None:
            events.append(f"pool, handed over after {after_s:g} s")

        def prepare(self, probe: str) -> None:
            events.append(f"re-runs of {probe} started")

        def wait_ready(self, timeout_s: float) -> int:
            events.append("re-runs ready")
            return 4

        def close(self) -> None:
            events.append("re-runs closed")

    def run_sweep(definition: Any, runner: Any, progress: Any) -> str:
        events.append(f"clock: {runner.slots} slots, re-runs {'kept' if runner.reruns else 'cold'}")
        if excluded := definition.entries[0].options.kernel_name_exclude:
            events.append(f"every process excludes {excluded}")
        return "sweep"

    monkeypatch.setattr(bench, "Spares", Spares)
    monkeypatch.setattr(bench, "RerunPool", Pool)
    monkeypatch.setattr(bench, "run_sweep", run_sweep)


def _timed(tmp_path: Path, warm_reruns: bool, confirm: bool = True) -> None:
    settings = Settings(data_dir=tmp_path / "data", confirm=confirm)
    bench.timed("grid", 4, True, tmp_path, settings, 2, primed=True, warm_reruns=warm_reruns)


EXPERIMENTS = (
    "CUPROBE_BENCH_RERUNS_ORDER",
    "CUPROBE_BENCH_RERUNS_AFTER_S",
    "CUPROBE_BENCH_IDLE_RERUNS",
    "CUPROBE_BENCH_OPTIONS",
    "CUPROBE_BENCH_NEEDS_IGNORED",
    "CUPROBE_BENCH_TORCH_RECORDS",
)


def _experiment(monkeypatch: pytest.MonkeyPatch, **env: str) -> Events:
    """The stand-ins in place, every experiment's variable unset but those given; what they record."""
    events = Events()
    _stand_ins(monkeypatch, events)
    for name in EXPERIMENTS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return events


def _made_after_the_spares(clock: str) -> list[str]:
    """What the bench asks for, in order, where the pool is made once the spares are ready."""
    started = ["re-runs of narrow-matmul started", "re-runs ready"]
    spares = ["spare asked", "spare asked", "spares ready"]
    return ["pool, handed over after 0 s", *spares, *started, clock, "spares closed", "re-runs closed"]


def test_the_ready_reruns_are_made_once_the_spares_are_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _experiment(monkeypatch)
    _timed(tmp_path, warm_reruns=True)
    assert events == _made_after_the_spares("clock: 2 slots, re-runs kept")


@pytest.mark.parametrize(
    ("order", "first"),
    [
        ("before", ["re-runs of narrow-matmul started", "re-runs ready", "spare asked"]),
        ("beside", ["re-runs of narrow-matmul started", "spare asked"]),
    ],
)
def test_the_experiment_can_make_them_before_or_beside_the_spares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str, first: list[str]
) -> None:
    events = _experiment(monkeypatch, CUPROBE_BENCH_RERUNS_ORDER=order, CUPROBE_BENCH_RERUNS_AFTER_S="1.2")
    _timed(tmp_path, warm_reruns=True)
    assert events[0] == "pool, handed over after 1.2 s"
    assert events[1 : 1 + len(first)] == first
    assert events.count("re-runs of narrow-matmul started") == 1
    assert events.index("re-runs ready") < events.index("clock: 2 slots, re-runs kept")


@pytest.mark.parametrize(("warm_reruns", "confirm"), [(False, True), (True, False)])
def test_no_pool_without_warm_reruns_or_without_the_confirmation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warm_reruns: bool, confirm: bool
) -> None:
    events = _experiment(monkeypatch)
    _timed(tmp_path, warm_reruns=warm_reruns, confirm=confirm)
    assert events == ["spare asked", "spare asked", "spares ready", "clock: 2 slots, re-runs cold", "spares closed"]


def test_the_idle_experiment_makes_the_pool_with_the_confirmation_off_and_gives_the_sweep_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CUPROBE_BENCH_IDLE_RERUNS=1: the four re-run processes made and ready as for a confirming sweep, alive through
    it, never handed to it."""
    events = _experiment(monkeypatch, CUPROBE_BENCH_IDLE_RERUNS="1")
    _timed(tmp_path, warm_reruns=True, confirm=False)
    assert events == _made_after_the_spares("clock: 2 slots, re-runs cold")


def test_the_options_experiment_gives_every_process_the_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = _experiment(monkeypatch, CUPROBE_BENCH_OPTIONS='{ kernel_name_exclude = ["kns=cuprobe_hidden_write"] }')
    _timed(tmp_path, warm_reruns=False, confirm=False)
    assert "every process excludes ['kns=cuprobe_hidden_write']" in events


def test_slots_that_are_not_k_values_are_refused_naming_the_one(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="sweep.py")
    assert bench.slot_values(parser, "1,2,8") == [1, 2, 8]
    for bad, named in (("2,x", "'x'"), ("0", "'0'"), ("4,", "''"), ("-1", "'-1'")):
        with pytest.raises(SystemExit) as exited:
            bench.slot_values(parser, bad)
        assert exited.value.code == 2
        assert f"--slots {bad}: {named} is not a K (a whole number from 1)" in capsys.readouterr().err


@pytest.mark.parametrize(("ignored", "with_torch"), [(False, 1), (True, 8)])
def test_each_first_wave_process_gets_a_spare_for_its_own_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ignored: bool, with_torch: int
) -> None:
    """Batches packed by what their cases need differ in their start-up (only the one with the torch cases imports
    torch, and a spare takes only a run of its own start-up): the bench readies one spare for each of the first K
    processes. CUPROBE_BENCH_NEEDS_IGNORED=1, the experiment, plans as before the needs were counted: on the 384-case
    grid at K = 8, the torch cases in every batch."""
    batching = BATCHING["narrow-matmul"]
    monkeypatch.setattr(batching, "needs", batching.needs)  # the experiment replaces it: put it back afterwards
    events = _experiment(monkeypatch, **({"CUPROBE_BENCH_NEEDS_IGNORED": "1"} if ignored else {}))
    settings = Settings(data_dir=tmp_path / "data", confirm=False)
    bench.timed("grid", 128, True, tmp_path, settings, 8, primed=True)
    assert events.count("spare asked") == 8
    definition = parse_definition(bench.GRID.format(name="grid", batch="true", last=128))
    expected = [r.params for _, r in requests_of(plan(definition, 8))]
    assert [r.params for r in events.requests] == expected
    probe = NarrowMatmul()
    torch = [probe.uses_torch(NarrowMatmulParams.model_validate(r.params)) for r in events.requests]
    assert sum(torch) == with_torch


def test_the_experiment_can_set_what_torchs_import_costs_a_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CUPROBE_BENCH_TORCH_RECORDS: the import counted lower, the batch with the torch cases carries more records."""
    monkeypatch.setitem(NEED_RECORDS, "torch", NEED_RECORDS["torch"])  # the experiment sets it: put it back afterwards
    batching = BATCHING["narrow-matmul"]
    fixed = {"m": 32, "k": 32, "tile": 32}
    carried = {}
    for value in ("3000", "1000"):
        events = _experiment(monkeypatch, CUPROBE_BENCH_TORCH_RECORDS=value)
        bench.timed("grid", 128, True, tmp_path / value, Settings(data_dir=tmp_path / "data", confirm=False), 8, True)
        assert NEED_RECORDS["torch"] == float(value)
        probe = NarrowMatmul()
        (carrier,) = [r for r in events.requests if probe.uses_torch(NarrowMatmulParams.model_validate(r.params))]
        model = NarrowMatmulParams.model_validate(carrier.params)
        carried[value] = sum(batching.records(fixed, {"variants": v, "n": n}) for v, n in model.selected())
    assert carried["1000"] > carried["3000"] + 1000, carried
