"""How cuprobe's probe processes wait for the GPU: as the driver chooses unless the setting says otherwise, and then
only sanitizer runs and re-runs (a bare run may be a timing probe's); the flag reaches the driver before the primary
context exists."""

from __future__ import annotations

from typing import Any

import pytest

from cuprobe.contract import Tool
from cuprobe.probes.gpu import SCHEDULE_ENV, set_schedule
from cuprobe.service.config import Settings
from cuprobe.service.probing.secrets import probe_environment

OPERATOR = {"PATH": "/usr/bin", SCHEDULE_ENV: "spin"}


@pytest.mark.parametrize("trusted", [False, True], ids=["service-job", "local-run"])
def test_set_to_blocking_sanitizer_runs_wait_blocking_and_bare_runs_keep_the_drivers_choice(trusted: bool) -> None:
    settings = Settings(cuda_schedule="blocking")
    for tool in (Tool.INITCHECK, Tool.MEMCHECK, Tool.RACECHECK, Tool.SYNCCHECK):
        assert probe_environment(tool, settings, trusted=trusted, source=OPERATOR)[SCHEDULE_ENV] == "blocking"
    # A bare run may be a timing probe's: the worker's own variable does not reach it either.
    assert SCHEDULE_ENV not in probe_environment(Tool.NONE, settings, trusted=trusted, source=OPERATOR)


def test_by_default_every_process_is_left_to_the_driver() -> None:
    settings = Settings()
    assert settings.cuda_schedule == "auto"
    # The worker's own variable is not passed on as such: only the setting decides.
    assert SCHEDULE_ENV not in probe_environment(Tool.INITCHECK, settings, source=OPERATOR)


def test_an_unknown_schedule_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="cuda_schedule"):
        Settings(cuda_schedule="sleepy")


class Driver:
    """Stands in for libcuda's primary-context calls (no driver exists on a CPU machine)."""

    def __init__(self, code: int = 0) -> None:
        self.code, self.calls = code, []  # type: list[tuple[Any, int]]

    def cuDevicePrimaryCtxSetFlags_v2(self, device: Any, flags: Any) -> int:
        self.calls.append((device, flags.value))
        return self.code


@pytest.mark.parametrize(("name", "flag"), [("blocking", 4), ("yield", 2), ("spin", 1)])
def test_the_named_flag_is_set_on_the_primary_context(name: str, flag: int) -> None:
    driver = Driver()
    assert set_schedule(driver, 0, name)
    assert driver.calls == [(0, flag)]


@pytest.mark.parametrize("name", [None, "", "auto", "unknown"])
def test_nothing_is_set_where_the_driver_chooses(name: str | None) -> None:
    driver = Driver()
    assert not set_schedule(driver, 0, name)
    assert driver.calls == []


def test_a_refusal_leaves_the_drivers_default_and_says_so() -> None:
    assert not set_schedule(Driver(code=201), 0, "blocking")
