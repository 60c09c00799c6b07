"""Each case of a probe's result carries its wall seconds (`seconds`), and the result the setup before the first."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from cuprobe.contract import Expectation, Tool
from cuprobe.probes import base
from cuprobe.probes.base import Recorder
from tests.unit.probes.conftest import ProbeRun


class _Params(BaseModel):
    pass


def test_a_case_runs_until_the_next_begins_and_the_last_until_the_probe_ends(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clock = iter([10.0, 11.5, 13.5, 16.0, 99.0])  # created, case a, case b, closed, (written: nothing open)
    monkeypatch.setattr(base.time, "monotonic", lambda: next(clock))
    recorder = Recorder("p", Tool.NONE, _Params())
    recorder.case("a", Expectation())
    recorder.case("b", Expectation())
    recorder.close_case()
    recorder.write(tmp_path / "result.json")
    written = json.loads((tmp_path / "result.json").read_text())
    assert [c["observations"]["seconds"] for c in written["cases"]] == [2.0, 2.5]
    assert written["context"]["before_first_case_s"] == 1.5


def test_a_real_probe_process_times_its_cases_within_its_own_wall_time(run_probe: ProbeRun) -> None:
    start = time.monotonic()
    code, result, _ = run_probe(
        "bf16-matmul", {"backends": ["torch-cpu", "pycuda"], "m": 64, "k": 64, "n": 64, "timing": False}
    )
    wall = time.monotonic() - start
    assert code == 0 and result["complete"]
    seconds = [c["observations"]["seconds"] for c in result["cases"]]
    assert len(seconds) == 2 and all(s >= 0 for s in seconds)
    assert result["context"]["before_first_case_s"] >= 0
    assert sum(seconds) + result["context"]["before_first_case_s"] < wall
