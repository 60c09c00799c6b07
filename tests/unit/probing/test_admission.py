"""Admission: the job a request becomes goes to the queue its parameters and tool need; bad requests name the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.probing.admission import BadRequest, admit
from cuprobe.service.queue.submit import JobSpec, check, create
from cuprobe.service.sweep.definition import DefinitionError, parse_definition
from cuprobe.service.sweep.plan import plan

SETTINGS = Settings(default_gpu_arch="sm90")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'c.db'}")
    s.migrate()
    return s


def _queue(store: Store, **spec: Any) -> str:
    """The queue of the job stored for `spec`, submitted as the API submits it."""
    return create(check(JobSpec.model_validate(spec), SETTINGS), store, SETTINGS).queue


def test_determinism_at_its_defaults_goes_to_the_gpu_queue(store: Store) -> None:
    # Its default device is cuda: on the cpu queue (whose worker hides every GPU) it could only end unavailable.
    assert _queue(store, probe="determinism") == "gpu.sm90"
    assert _queue(store, probe="determinism", params={"device": "cpu"}) == "cpu"


@pytest.mark.parametrize(
    ("probe", "params", "queue"),
    [
        ("gradcheck", {"device": "cpu"}, "cpu"),
        ("gradcheck", {"device": "cuda"}, "gpu.sm90"),
        ("bf16-matmul", {"backends": ["torch-cpu"]}, "cpu"),
        ("bf16-matmul", {"backends": ["torch-cpu", "torch-cuda"]}, "gpu.sm90"),
    ],
)
def test_a_bare_run_routes_by_its_parameters(store: Store, probe: str, params: dict[str, Any], queue: str) -> None:
    assert _queue(store, probe=probe, tool="none", params=params) == queue


@pytest.mark.parametrize("tool", ["initcheck", "memcheck", "racecheck", "synccheck"])
def test_any_sanitizer_tool_goes_to_the_gpu_queue(store: Store, tool: str) -> None:
    # gradcheck on the CPU needs no GPU bare, but compute-sanitizer needs one whatever the probe computes on.
    assert _queue(store, probe="gradcheck", tool=tool, params={"device": "cpu"}) == "gpu.sm90"
    assert _queue(store, probe="gradcheck", tool=tool, params={"device": "cpu"}, lane="sweep") == "gpu.sm90.sweep"


def test_selftest_stays_on_the_cpu_queue_and_arch_picks_the_gpu_queue(store: Store) -> None:
    assert _queue(store, probe="selftest") == "cpu"
    assert _queue(store, probe="uninit-read", arch="sm100") == "gpu.sm100"


@pytest.mark.parametrize(
    ("probe", "tool", "params", "field", "says"),
    [
        ("nope", None, {}, "probe", "unknown probe 'nope'"),
        ("determinism", "memcheck", {}, "tool", "does not run under memcheck: it runs under none"),
        ("selftest", None, {"behaviour": "dance"}, "params.behaviour", "bad parameters for probe selftest"),
        ("determinism", None, {"processes": 1}, "params.processes", "greater than or equal to 2"),
    ],
)
def test_bad_requests_name_the_field(
    probe: str, tool: str | None, params: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(BadRequest) as info:
        admit(probe, tool, params)
    assert info.value.field == field and says in str(info.value) and info.value.status == 422


def test_admission_fills_in_the_default_tool_and_parameters() -> None:
    admitted = admit("uninit-read", None, {})
    assert admitted.tool == "initcheck" and admitted.params["n"] == 1024 and admitted.needs_gpu


def test_a_sweep_whose_grid_point_fails_admission_is_refused_before_it_runs() -> None:
    definition = parse_definition(
        'name = "s"\n[[entry]]\nprobe = "determinism"\ntool = "none"\ngrid = { processes = [4, 1] }\n'
    )
    with pytest.raises(DefinitionError, match=r"entry determinism .*processes=1.*params\.processes"):
        plan(definition)
