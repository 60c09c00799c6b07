"""Confirmed initcheck findings in a user's own torch tests (tests/gpu/programs/confirm_tests): each read gets its
verdict, and the gate passes the blind spot, the masked padding and the clean test and fails the half-written read
and the read before a write."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cuprobe.service.config import Settings
from cuprobe.service.gate.runs import run_local
from cuprobe.service.gate.suite import Suite, expand
from cuprobe.service.gate.verdict import judge

pytestmark = pytest.mark.gpu
PROGRAM = Path(__file__).parent / "programs" / "confirm_tests" / "test_planted_reads.py"
EXPECTED = {
    "test_bf16_linear_output_read": {"blind-spot"},
    "test_half_written_empty_summed": {"consequential"},
    "test_read_before_write": {"consequential"},
    "test_masked_padding_read": {"benign"},
}


def test_each_planted_read_gets_its_verdict_and_the_gate_fails_only_the_real_ones(
    tmp_path: Path, settings: Settings, workdir: Path
) -> None:
    (tmp_path / "tests").mkdir()
    shutil.copy(PROGRAM, tmp_path / "tests" / PROGRAM.name)
    suite = Suite.model_validate(
        {
            "name": "confirm",
            "probe": [{"name": "control", "probe": "uninit-read", "tool": "initcheck", "control": True}],
            "test": [{"name": "reads", "kind": "pytest", "tool": "initcheck", "paths": ["tests"],
                      "cwd": str(tmp_path), "timeout_s": 300}],
        }
    )
    runs = run_local(expand(suite), workdir, settings, slots=2)
    report = judge(suite, runs, None)
    verdicts: dict[str, set[str]] = {}
    for item in report.findings:
        if item.finding.case and "::" in item.finding.case:
            verdicts.setdefault(item.finding.case.split("::")[-1], set()).add(item.confirmation)
    for run in runs:
        for result in run.results:
            print(run.entry.case, result.outcome.value, f"{result.duration_s:.1f} s",
                  f"confirmation {result.confirmation_s} s", result.message[:200])
    for item in report.findings:
        evidence = item.finding.confirmation_evidence
        print(item.finding.case, item.finding.kind, item.confirmation, evidence.reason if evidence else "")
    assert verdicts == EXPECTED
    failing = sorted({i.finding.case.split("::")[-1] for i in report.findings if i.fails and i.finding.case})
    assert failing == ["test_half_written_empty_summed", "test_read_before_write"]
    assert report.exit_code == 1 and not report.not_run
