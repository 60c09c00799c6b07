"""Each result says where its time went: the runner's stages, in the order they ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.probes import registry
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.models.timing import Stages
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.sanitizer.locate import _version
from tests.conftest import RUNS, VERSIONS


def test_a_bare_run_times_each_stage_and_its_run_is_the_supervised_duration(tmp_path: Path) -> None:
    request = ProbeRequest(probe="selftest", tool=Tool.NONE, params={"behaviour": "sleep", "seconds": 0.2})
    result = run_probe(request, workdir=tmp_path, settings=Settings())
    assert result.outcome is Outcome.CLEAN
    assert list(result.timing) == ["prepare", "spawn", "run", "reap", "artifacts", "parse", "classify", "scrub"]
    assert result.timing["run"] >= 0.2
    assert abs(result.duration_s - (result.timing["spawn"] + result.timing["run"] + result.timing["reap"])) < 0.002


@pytest.mark.parametrize("early", [True, False], ids=["re-runs beside the run", "re-runs after it"])
def test_a_sanitizer_run_times_its_parse_and_its_confirmation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings, early: bool
) -> None:
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))
    monkeypatch.setattr(type(registry.get("uninit-read")), "reruns_early", early)  # off: as the command probe
    _version.cache_clear()
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(RUNS / f"uninit-read-initcheck-{VERSIONS[1]}"))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "0")
    stages = Stages()
    stages.add("claim", 0.5)  # a worker's own stages come first
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK), workdir=tmp_path,
        settings=replay_settings, stages=stages,
    )
    assert result.outcome is Outcome.FINDINGS
    assert list(result.timing) == [
        "claim", "prepare", "spawn", "run", "reap", "artifacts", "parse", "classify", "confirm", "scrub",
    ]
    assert result.timing["claim"] == 0.5
    assert result.confirmation_s is not None
    if early:  # the confirm stage is only the wait for re-runs that started with the sanitizer run
        assert result.timing["confirm"] <= result.confirmation_s + 0.001
    else:
        assert result.timing["confirm"] >= result.confirmation_s - 0.001


def test_a_run_that_cannot_start_times_only_its_preparation(tmp_path: Path) -> None:
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK),
        workdir=tmp_path,
        settings=Settings(sanitizer_path=tmp_path / "no-such-sanitizer"),
    )
    assert result.outcome is Outcome.UNAVAILABLE and list(result.timing) == ["prepare"]
