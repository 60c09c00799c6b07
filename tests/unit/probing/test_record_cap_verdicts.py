"""A run that reaches the record cap: the cases after it are not judged (their records were counted, not kept),
so a positive control there does not make the run `sanitizer_error` ("the instrument is broken"). Seen on the H200:
narrow-matmul with n = 1..16 reads 10,400 padding elements, so n = 14, 15, 16 came after the 10,000-record cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.probing.runner import run_probe
from cuprobe.service.sanitizer.classify import PAST_THE_CAP
from cuprobe.service.sanitizer.locate import _version
from tests.conftest import RUNS

CAPTURE = RUNS / "narrow-matmul-initcheck-2026.4.0.0"  # 6,624 records in 39 cases
PARAMS = {
    "m": 32,
    "k": 32,
    "tile": 32,
    "n": [1, 2, 3, 4, 8, 31, 32, 33, 63, 64, 65, 127, 128],
    "variants": ["unguarded", "guarded", "torch"],
}


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Settings, max_records: int):
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))
    _version.cache_clear()
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(CAPTURE))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "0")
    request = ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, params=PARAMS, confirm=False)
    return run_probe(
        request, workdir=tmp_path / str(max_records), settings=settings.model_copy(update={"max_records": max_records})
    )


def test_positive_controls_past_the_record_cap_are_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings
) -> None:
    whole = run(tmp_path, monkeypatch, replay_settings, 100_000)
    assert whole.outcome is Outcome.FINDINGS and not whole.truncated
    assert not any(v.reason == PAST_THE_CAP for v in whole.cases)

    capped = run(tmp_path, monkeypatch, replay_settings, 1_000)
    assert capped.outcome is Outcome.FINDINGS, capped.message  # was sanitizer_error: "the instrument is broken"
    assert capped.truncated and capped.records == whole.records  # every record still counted
    skipped = [v for v in capped.cases if v.reason == PAST_THE_CAP]
    controls_after = [v for v in skipped if not v.expectation.clean]
    assert controls_after, "the cap should fall before some unguarded case that must fire"
    order = [v.id for v in capped.cases]
    cut = order.index(capped.truncated_at_case)
    assert all(order.index(v.id) > cut for v in skipped)
    # everything before the cut is judged as in the whole run
    before = {v.id: (v.passed, v.reason) for v in capped.cases[:cut]}
    assert before == {v.id: (v.passed, v.reason) for v in whole.cases[:cut]}
