"""replay's built-in example: its processes compute the same bits by construction, however loaded the machine."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.probing.runner import run_probe

# Processes per replay and replays: 2 x 3 comparisons of one step, each process racing two CPU burners.
PROCESSES, REPLAYS = 4, 2


@pytest.fixture
def busy_machine() -> Iterator[None]:
    """Two processes spinning on the CPU for the test's length (a 2-core CI machine is then fully loaded)."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def test_the_example_replays_clean_under_load_with_its_threads_pinned(tmp_path: Path, busy_machine: None) -> None:
    for i in range(REPLAYS):
        request = ProbeRequest(probe="replay", params={"processes": PROCESSES, "example_steps": 1})
        result = run_probe(request, workdir=tmp_path / f"run{i}")
        assert result.outcome is Outcome.CLEAN, [f.message for f in result.findings] or result.message
        obs = result.cases[0].observations
        assert obs["pinned_threads"] and obs["deterministic_algorithms"]
        assert {(h["threads"], h["interop_threads"]) for h in obs["hosts"]} == {(1, 1)}
        assert len(obs["hosts"]) == PROCESSES


def test_the_pinning_reaches_the_blas_through_the_environment(tmp_path: Path) -> None:
    from cuprobe.probes.replay.probe import PINNED_ENV, ReplayParams, _child_env, deterministic_run, pinned_run

    example, own = ReplayParams(), ReplayParams(entry="pkg.mod:main")
    env = _child_env(example, tmp_path, deterministic_run(example), pinned_run(example))
    assert {k: env[k] for k in PINNED_ENV} == {**PINNED_ENV, "OMP_DYNAMIC": "FALSE", "MKL_DYNAMIC": "FALSE"}
    # A user's own program runs with the settings it was given: pinning it would hide what it does in production.
    assert not pinned_run(own) and not deterministic_run(own)
    assert _child_env(own, tmp_path, False, False).get("OMP_DYNAMIC") == os.environ.get("OMP_DYNAMIC")
    # The plant is nondeterministic on purpose (atomics on CUDA): deterministic algorithms would make it agree.
    assert not deterministic_run(ReplayParams(example_plant="index-add"))
