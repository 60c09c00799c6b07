"""The core on the real binary: uninit-read, the planted controls, and every could-not-run path."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.probes import confirm_control
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest, RunResult
from cuprobe.service.probing import runner
from cuprobe.service.probing.runner import run_probe
from tests.processes import processes_mentioning

pytestmark = pytest.mark.gpu
N, K = 1024, 1000  # expected: one finding of N - K = 24 uninitialized reads, at kernels/uninit_read.cu:6
# The confirmer's planted cases run in the same process (confirmation on, the default): their reads are records of
# the run too (the blind spot reads all N of its buffer, benign and consequential the N - K unwritten each).
CONTROL_RECORDS = confirm_control.N + 2 * (confirm_control.N - confirm_control.K)


def test_uninit_read_initcheck_reports_each_unwritten_element(settings: Settings, workdir: Path) -> None:
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK, params={"n": N, "k": K}),
        workdir=workdir,
        settings=settings,
    )
    assert result.outcome is Outcome.FINDINGS, result.message
    assert len(result.findings) == 1
    finding = result.findings[0]
    assert (finding.kind, finding.file, finding.line, finding.kernel) == (
        "uninitialized-global-read",
        "kernels/uninit_read.cu",
        6,
        "double_all",
    )
    assert finding.count == N - K
    assert result.summary_count == result.records == N - K + (CONTROL_RECORDS if settings.confirm else 0)
    assert result.sanitizer_version and finding.sanitizer_version == result.sanitizer_version
    assert all(case.passed for case in result.cases)


@pytest.mark.parametrize("tool", [Tool.MEMCHECK, Tool.RACECHECK, Tool.SYNCCHECK])
def test_uninit_read_is_clean_under_other_tools(settings: Settings, workdir: Path, tool: Tool) -> None:
    result = run_probe(
        ProbeRequest(probe="uninit-read", tool=tool, params={"n": N, "k": K}),
        workdir=workdir,
        settings=settings,
    )
    assert result.outcome is Outcome.CLEAN, result.message


@pytest.mark.parametrize(
    "defect,own_tool,kind",
    [
        ("oob", Tool.MEMCHECK, "invalid-global-write"),
        ("race", Tool.RACECHECK, "shared-memory-race"),
        ("syncwarp", Tool.SYNCCHECK, "barrier-error-invalid-arguments"),
    ],
)
@pytest.mark.parametrize("tool", [Tool.MEMCHECK, Tool.RACECHECK, Tool.SYNCCHECK, Tool.INITCHECK])
def test_planted_control_fires_under_its_tool_only(
    settings: Settings, workdir: Path, defect: str, own_tool: Tool, kind: str, tool: Tool
) -> None:
    result = run_probe(
        ProbeRequest(probe="planted", tool=tool, params={"defect": defect}),
        workdir=workdir,
        settings=settings,
    )
    if tool is own_tool:
        assert result.outcome is Outcome.FINDINGS, result.message
        assert kind in {f.kind for f in result.findings if not f.fallout}
    else:
        assert result.outcome is Outcome.CLEAN, (result.message, [f.signature for f in result.findings])


def test_program_that_never_touches_cuda_is_sanitizer_error(settings: Settings, workdir: Path) -> None:
    result = run_probe(ProbeRequest(probe="selftest", tool=Tool.MEMCHECK), workdir=workdir, settings=settings)
    assert result.outcome is Outcome.SANITIZER_ERROR
    assert "before its first CUDA call" in result.message


def test_missing_program_is_probe_error(settings: Settings, workdir: Path) -> None:
    settings = settings.model_copy(update={"python": "/nonexistent/python3"})
    result = run_probe(ProbeRequest(probe="selftest", tool=Tool.MEMCHECK), workdir=workdir, settings=settings)
    assert result.outcome is Outcome.PROBE_ERROR
    assert "does not exist" in result.message


@pytest.mark.parametrize(
    "behaviour,outcome,words",
    [
        ("kill", Outcome.CRASHED, "SIGKILL"),
        ("segv", Outcome.CRASHED, "SIGSEGV"),
        ("raise", Outcome.PROBE_ERROR, "raised on request"),
        ("exit0-no-sentinel", Outcome.PROBE_ERROR, "did not finish"),
        ("ok", Outcome.CLEAN, "0 errors"),
    ],
)
def test_probe_endings_under_the_real_sanitizer(
    settings: Settings, workdir: Path, behaviour: str, outcome: Outcome, words: str
) -> None:
    result = run_probe(
        ProbeRequest(
            probe="selftest", tool=Tool.MEMCHECK, params={"behaviour": behaviour, "cuda_init": True}
        ),
        workdir=workdir,
        settings=settings,
    )
    assert result.outcome is outcome, result.message
    assert words in result.message


def test_hang_times_out_and_leaves_no_process(settings: Settings, workdir: Path) -> None:
    result = run_probe(
        ProbeRequest(
            probe="selftest", tool=Tool.MEMCHECK, timeout_s=8, params={"behaviour": "hang", "cuda_init": True}
        ),
        workdir=workdir,
        settings=settings,
    )
    assert result.outcome is Outcome.TIMEOUT
    assert "8 s" in result.message
    assert processes_mentioning(str(workdir)) == []


def _what_it_found(result: RunResult) -> tuple[object, ...]:
    """A run's records, the sanitizer's summary count, and each finding's signature, count and confirmation."""
    return result.records, result.summary_count, [(f.signature, f.count, f.confirmation) for f in result.findings]


@pytest.mark.parametrize(
    "probe,params,tool,outcome",
    [
        ("uninit-read", {"n": N, "k": K}, Tool.INITCHECK, Outcome.FINDINGS),
        ("uninit-read", {"n": N, "k": K}, Tool.MEMCHECK, Outcome.CLEAN),
        ("narrow-matmul", {"n": [1, 2, 3], "variants": ["unguarded", "torch"]}, Tool.INITCHECK, Outcome.FINDINGS),
    ],
)
def test_a_quick_exit_finds_what_a_full_exit_finds(
    settings: Settings,
    workdir: Path,
    probe: str,
    params: dict[str, object],
    tool: Tool,
    outcome: Outcome,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A quick exit (runner.quick_exits): the probe's process skips its teardown; the sanitizer's records, summary
    and findings are those of a process that exits in full (the runner's choice turned off for the second run)."""
    request = ProbeRequest(probe=probe, tool=tool, params=params)
    quick = run_probe(request, workdir=workdir / "quick", settings=settings)
    monkeypatch.setattr(runner, "quick_exits", lambda *args: False)
    full = run_probe(request, workdir=workdir / "full", settings=settings)
    assert "--quick-exit" in quick.command and "--quick-exit" not in full.command
    assert quick.outcome is full.outcome is outcome, (quick.message, full.message)
    assert _what_it_found(quick) == _what_it_found(full)


@pytest.mark.parametrize(
    ("variants", "outcome"),
    [
        (["unguarded", "guarded", "torch"], Outcome.FINDINGS),  # the import beside the kernel cases
        (["torch"], Outcome.CLEAN),  # nothing before the torch cases: the probe's import waits for the thread's
    ],
)
def test_an_early_torch_import_finds_what_a_late_one_finds(
    settings: Settings, workdir: Path, variants: list[str], outcome: Outcome, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch imported on a second thread beside the kernel cases (runner.prefetches_torch); the records, summary,
    findings and every case's verdict are those of a process that imports it when its torch cases come."""
    request = ProbeRequest(probe="narrow-matmul", tool=Tool.INITCHECK, params={"n": [1, 5, 32], "variants": variants})
    early = run_probe(request, workdir=workdir / "early", settings=settings)
    monkeypatch.setattr(runner, "prefetches_torch", lambda *args: False)
    late = run_probe(request, workdir=workdir / "late", settings=settings)
    assert "--prefetch-torch" in early.command and "--prefetch-torch" not in late.command
    assert early.outcome is late.outcome is outcome, (early.message, late.message)
    assert _what_it_found(early) == _what_it_found(late)
    assert [(c.id, c.passed) for c in early.cases] == [(c.id, c.passed) for c in late.cases]
    assert len([c for c in early.cases if c.id.startswith("torch-")]) == 3
    assert isinstance(early.probe_context["torch_prefetch"]["took_s"], float)
    assert "torch_prefetch" not in late.probe_context
