"""A sweep's ready re-runs held back until every batch of their grid has ended its sanitizer run
(Settings.confirm_hold, service/probing/confirm_shared.py), and released at once where a later wave still has to start.

The sanitizer runs and the re-runs are played back (tests/unit/probing/bare_replay.py); the stand-in sanitizer's n-th
run ends n x CUPROBE_REPLAY_STAGGER_S later than the first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.models import Confirmation, RunResult
from cuprobe.service.probing import confirm
from cuprobe.service.probing.confirm_shared import SharedReruns
from cuprobe.service.probing.warm_reruns import RerunPool
from cuprobe.service.sweep.execute import LocalRunner
from tests.unit.probing.bare_replay import REQUEST, bare_log, consequential, replay_bare

HELD = "handed their cases once the grid's"


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, replay_settings: Settings) -> tuple[Path, Settings]:
    monkeypatch.setenv("CUPROBE_REPLAY_STAGGER_S", "2")
    return replay_bare(monkeypatch, tmp_path, replay_settings)


def _sweep(tmp_path: Path, settings: Settings, requests: int, slots: int, pool: bool = True) -> dict[int, RunResult]:
    """A local sweep of `requests` copies of the request; `pool`: with the four re-runs ready before it (a pool kept
    by the caller, as bench/sweep.py keeps one), else as `cuprobe sweep run` makes it, with none."""
    if not pool:
        return dict(LocalRunner(tmp_path / "sweep", settings, slots=slots).run_all([REQUEST] * requests))
    ready = RerunPool(tmp_path / "pool", settings)
    ready.prepare(REQUEST.probe)
    assert ready.wait_ready(60) == 4
    try:
        return dict(LocalRunner(tmp_path / "sweep", settings, slots=slots, reruns=ready).run_all([REQUEST] * requests))
    finally:
        ready.close()


def _ended(log: Path) -> list[float]:
    return sorted(float(p.read_text()) for p in log.glob("sanitizer-ended-*"))


@pytest.mark.parametrize(
    ("hold", "pool"), [(True, True), (True, False), (False, True)], ids=["held", "held-own-pool", "not-held"]
)
def test_held_reruns_get_their_cases_once_every_batch_of_the_grid_has_run(
    bare: tuple[Path, Settings], tmp_path: Path, hold: bool, pool: bool
) -> None:
    """Held, the four ready re-runs get their parameters only after the second batch's sanitizer run has ended, from
    the caller's pool or (`held-own-pool`: no pool given, as `cuprobe sweep run`) from one the sweep makes as it
    starts. Not held (the control), they get them as the sweep begins."""
    log, settings = bare
    got = _sweep(tmp_path, settings.model_copy(update={"confirm_hold": hold}), requests=2, slots=2, pool=pool)

    ended = _ended(log)
    handed = [float(str(run["handed"])) for run in bare_log(log)]
    assert len(ended) == 2 and len(handed) == 4
    # The second batch ran on after the first had ended (the stand-in's stagger is 2 s; each run's own start-up
    # under load moves its end by a little, either way, so half the stagger is what the order is held to).
    assert ended[1] - ended[0] >= 1
    for result in got.values():
        assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}, result.message
        assert all(check["ok"] for check in result.confirmation_control)
        assert "4 of them in processes ready before it" in result.message
    if hold:
        assert min(handed) >= ended[1]
        assert all(f"{HELD} 2 processes had run" in r.message for r in got.values())
    else:  # the control: handed their cases as the sweep began, beside the second batch's run
        assert min(handed) < ended[1]
        assert not any(HELD in r.message for r in got.values())


@pytest.mark.timeout(120)
def test_with_more_batches_than_slots_the_first_to_want_them_releases_them(
    bare: tuple[Path, Settings], tmp_path: Path
) -> None:
    """Three batches on two slots: the third starts only once a slot is free, so a batch that waited for it would
    hold its slot for ever. The first batch to want the re-runs while the third has not begun releases them."""
    log, settings = bare
    got = _sweep(tmp_path, settings.model_copy(update={"confirm_hold": True}), requests=3, slots=2)

    assert sorted(got) == [0, 1, 2]
    assert len(_ended(log)) == 3 and len(bare_log(log)) == 4
    for result in got.values():
        assert set(consequential(result.findings)) == {Confirmation.CONSEQUENTIAL}, result.message
        assert "one set for the sweep's 3 processes of this grid" in result.message
        assert HELD not in result.message
    assert max(float(str(run["handed"])) for run in bare_log(log)) < _ended(log)[-1]



def test_a_sweep_stopped_before_its_batches_end_starts_no_rerun(
    bare: tuple[Path, Settings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Stopped while its set is held (Ctrl-C, SIGTERM: the runner closes the set), the held processes are let go
    unused and no cold re-run process starts in their place (a killed one might not live to log itself, so every
    cold start is counted where it is made)."""
    log, settings = bare
    cold: list[list[str]] = []
    real = confirm.supervise

    def counted(cmd: list[str], **kwargs: Any) -> Any:
        cold.append(cmd)
        return real(cmd, **kwargs)

    monkeypatch.setattr(confirm, "supervise", counted)
    pool = RerunPool(tmp_path / "pool", settings)
    pool.prepare(REQUEST.probe)
    assert pool.wait_ready(60) == 4
    shared = SharedReruns([REQUEST, REQUEST], settings.model_copy(update={"confirm_hold": True}), tmp_path, pool)
    member = shared.for_request(0)
    assert member is not None
    member.run_ended()  # one batch of two has run: the set stays held
    try:
        shared.close()
    finally:
        pool.close()
    assert bare_log(log) == [] and cold == []
    assert pool.taken == 4
