"""replay in the gate like any probe: a suite entry run locally, its finding new, its clean twin clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.gate.conftest import Gate, summary
from tests.unit.probes.test_replay import PROGRAM

SUITE = """
name = "replay-gate"

[[probe]]
name = "replay-marked"
probe = "replay"
tool = "none"
params = {{ entry = "tinynet:marked", cwd = {cwd}, processes = 2 }}

[[probe]]
name = "replay-noisy"
probe = "replay"
tool = "none"
params = {{ entry = "tinynet:noisy", cwd = {cwd}, processes = 2, capture = false }}
"""


def test_a_replay_divergence_fails_the_gate_and_names_the_tensor(
    gate: Gate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tinynet.py").write_text(PROGRAM)
    result = gate(SUITE.format(cwd=json.dumps(str(tmp_path))), "--junit", str(tmp_path / "junit.xml"))
    assert result.exit_code == 1, result.output
    text = summary(tmp_path)
    assert "| clean | 1 |" in text and "| findings | 1 |" in text
    assert "| new | - | replay-noisy | replay-divergence |" in text
    assert "`replay\\|middle\\|output\\|forward`" in text
    junit = (tmp_path / "junit.xml").read_text()
    assert "first diverging tensor: step 1 forward middle output" in junit
