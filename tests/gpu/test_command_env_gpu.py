"""The command probe's allowlisted environment on the real sanitizer: a planted defect in a command's child is
still found, so compute-sanitizer's own variables reach the child."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest
from cuprobe.service.probing.runner import run_probe

pytestmark = pytest.mark.gpu
HARNESS = Path("/tmp/harness")  # tests/gpu/programs/harness.cu, built by tests/gpu/capture.sh or here
SOURCE = Path(__file__).parent / "programs" / "harness.cu"
SH = str(Path(shutil.which("sh") or "/bin/sh").resolve())


@pytest.fixture(scope="module")
def harness() -> Path:
    """The harness, built here where no script built it first (these tests' planted defect must run, not be
    skipped); skipped only on a machine without nvcc, and an error where the build fails."""
    if HARNESS.is_file():
        return HARNESS
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(nvcc).is_file():
        pytest.skip("no nvcc to build /tmp/harness: nvcc -lineinfo -I. -o /tmp/harness tests/gpu/programs/harness.cu")
    root = SOURCE.parent.parent.parent.parent
    subprocess.run([nvcc, "-lineinfo", "-arch=native", f"-I{root}", "-o", str(HARNESS), str(SOURCE)], check=True)
    return HARNESS


@pytest.fixture
def command_enabled(monkeypatch: pytest.MonkeyPatch, harness: Path) -> None:
    monkeypatch.setenv("CUPROBE_COMMAND_ENABLED", "1")
    monkeypatch.setenv("CUPROBE_COMMAND_ALLOWLIST", f"{SH}:{HARNESS}")
    monkeypatch.setenv("CUPROBE_API_TOKEN", "gpu-test-secret-7731")  # must not reach the child


@pytest.mark.parametrize("through_sh", [False, True], ids=["command", "command's child"])
def test_planted_oob_in_a_command_or_its_child_is_found(
    settings: Settings, workdir: Path, command_enabled: None, through_sh: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a service job, in the sandbox (GPU device files bound in): a program the job names only inside a shell
    line must lie where the sandbox shows it, so the harness is copied into a folder of the job's own."""
    own = workdir / "job" / "bin" / "harness"  # in the job's directory, which the sandbox shows
    own.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(HARNESS, own)
    monkeypatch.setenv("CUPROBE_COMMAND_ALLOWLIST", f"{SH}:{own}")
    argv = ["sh", "-c", f"{own} oob"] if through_sh else [str(own), "oob"]
    result = run_probe(
        ProbeRequest(probe="command", tool=Tool.MEMCHECK, params={"argv": argv, "expect_exit": None}),
        workdir=workdir / "job",
        settings=settings,
    )
    assert result.outcome is Outcome.FINDINGS, result.message
    assert "invalid-global-write" in {f.kind for f in result.findings}
    assert "gpu-test-secret-7731" not in result.model_dump_json()
