"""The confirmation stage inside the runner, on a CPU: what it asks the sanitizer and what it concludes here."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.models import Confirmation, Outcome, ProbeRequest
from cuprobe.service.probing import runner
from cuprobe.service.probing.admission import admit
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.probing.runner import default_backtrace, run_probe
from cuprobe.service.queue.submit import JobSpec, create
from cuprobe.service.sanitizer.locate import _version
from tests.conftest import RUNS, VERSIONS, capture


@pytest.fixture
def gpu_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))


def replay(monkeypatch: pytest.MonkeyPatch, case: Path) -> None:
    _version.cache_clear()
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(case))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "0")


@pytest.mark.parametrize("version", VERSIONS)
def test_no_gpu_for_the_bare_reruns_leaves_the_finding_unconfirmed_with_the_reason(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, RUNS / f"uninit-read-initcheck-{version}")
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK), workdir=tmp_path, settings=replay_settings
    )
    assert result.outcome is Outcome.FINDINGS
    (finding,) = result.findings
    assert finding.confirmation is Confirmation.UNCONFIRMED and finding.confirmation_evidence is not None
    reason = finding.confirmation_evidence.reason
    assert reason.startswith("the bare re-run ff#1 (poison 0xFF) did not complete: exited 69") and "pycuda" in reason
    assert "0 consequential, 0 benign, 0 blind-spot, 1 unconfirmed" in result.message
    # The run carried the confirmer's control: its planted cases, its writer unchecked by a kernel filter.
    assert "--confirm-control" in result.command
    exclude = result.command.index("--kernel-name-exclude=kns=cuprobe_hidden_write")
    assert exclude < result.command.index("--")
    assert ("--initcheck-track-filtered-global-memory" in result.command) is version.startswith("2026")
    for label in ("ff-1", "ff-2", "zero", "sentinel"):  # every bare re-run left its logs
        assert "pycuda is not installed" in (tmp_path / "confirm" / label / "stderr.txt").read_text()


def test_confirmation_off_asks_for_nothing_and_decides_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, RUNS / f"uninit-read-initcheck-{VERSIONS[1]}")
    request = ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK, confirm=False)
    result = run_probe(request, workdir=tmp_path, settings=replay_settings)
    assert result.outcome is Outcome.FINDINGS and result.findings[0].confirmation is None
    assert "--confirm-control" not in result.command
    assert not any(arg.startswith("--kernel-name-exclude") for arg in result.command)
    assert not (tmp_path / "confirm").exists()


def test_a_user_kernel_filter_still_checks_the_controls_readers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, capture(VERSIONS[1], "initcheck_filtered"))
    request = ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK, kernel_filter=["double_all"])
    result = run_probe(request, workdir=tmp_path, settings=replay_settings)
    names = [arg.partition("=")[2] for arg in result.command if arg.startswith("--kernel-name=")]
    assert names == ["kns=double_all", "kns=cuprobe_control_"]


def test_torch_probes_run_initcheck_with_device_only_backtraces() -> None:
    assert default_backtrace(admit("bf16-matmul", Tool.INITCHECK, {"backends": ["torch-cuda"]})) == "device"
    assert default_backtrace(admit("narrow-linear", Tool.INITCHECK, {})) == "device"
    assert default_backtrace(admit("narrow-matmul", Tool.INITCHECK, {"variants": ["torch"]})) == "device"
    assert default_backtrace(admit("narrow-matmul", Tool.INITCHECK, {"variants": ["unguarded"]})) is None
    assert default_backtrace(admit("bf16-matmul", Tool.MEMCHECK, {"backends": ["torch-cuda"]})) is None
    assert default_backtrace(admit("uninit-read", Tool.INITCHECK, {})) is None


def test_the_narrow_matmul_batch_replayed_asks_for_device_backtraces_when_torch_is_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    replay(monkeypatch, capture(VERSIONS[1], "probe_narrow-matmul_initcheck"))
    request = ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, confirm=False)
    result = run_probe(request, workdir=tmp_path, settings=replay_settings)
    assert result.command[result.command.index("--show-backtrace") + 1] == "device"


def test_the_store_keeps_confirmation_and_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    # Findings are stored as JSON (FindingRow.finding): the new fields need no migration.
    replay(monkeypatch, RUNS / f"uninit-read-initcheck-{VERSIONS[1]}")
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK), workdir=tmp_path, settings=replay_settings
    )
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    job = create(JobSpec(probe="uninit-read", tool=Tool.INITCHECK), store, Settings())
    store.claim(job.id, "w:1", max_attempts=3, stale_after_s=60, job_dir=str(tmp_path))
    assert store.finish(job.id, 1, result)
    (stored,) = store.findings(job.id)
    assert stored.confirmation is Confirmation.UNCONFIRMED
    assert stored.confirmation_evidence == result.findings[0].confirmation_evidence
