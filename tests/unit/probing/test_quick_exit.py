"""runner.quick_exits: a probe that runs its cases in its own process ends it with os._exit once
its result is written, where the run asks the sanitizer for nothing it reports at teardown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cuprobe.contract import QUICK_EXIT_FLAG, Tool
from cuprobe.service.config import Settings
from cuprobe.service.models import Outcome, ProbeRequest, SanitizerOptions
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import PROJECT_ROOT, GpuFacts
from cuprobe.service.probing.runner import PlannedRun, plan_run, run_probe
from cuprobe.service.sanitizer.locate import _version
from tests.conftest import RUNS, VERSIONS

# The harness run as `python -m cuprobe.probes`, with an atexit hook that leaves a file: the finalizers a quick exit
# skips.
HARNESS = """
import atexit, pathlib, runpy, sys
marker = pathlib.Path(sys.argv[1])
atexit.register(marker.write_text, "finalized")
sys.argv = ["cuprobe.probes", *sys.argv[2:]]
runpy.run_module("cuprobe.probes", run_name="__main__", alter_sys=True)
"""


def _harness(tmp_path: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    tmp_path.mkdir()
    marker, out = tmp_path / "finalized.txt", tmp_path / "result.json"
    args = [sys.executable, "-c", HARNESS, str(marker), "uninit-read", "--out", str(out), "--tool", "initcheck"]
    done = subprocess.run([*args, *flags], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    return done, marker, out


def test_a_quick_exit_skips_the_finalizers_and_keeps_the_result_the_exit_code_and_the_output(tmp_path: Path) -> None:
    slow, slow_marker, slow_out = _harness(tmp_path / "slow")
    quick, quick_marker, quick_out = _harness(tmp_path / "quick", QUICK_EXIT_FLAG)
    assert slow_marker.exists() and not quick_marker.exists()  # the control: the hook runs on a normal exit
    assert quick.returncode == slow.returncode  # 0 on a GPU box, 69 (no pycuda or no GPU) here
    assert quick.stderr == slow.stderr and quick.stdout == slow.stdout  # flushed before the process ended
    written, plain = json.loads(quick_out.read_text()), json.loads(slow_out.read_text())
    said = ("probe", "tool", "complete", "unavailable", "error")
    assert {k: written.get(k) for k in said} == {k: plain.get(k) for k in said}
    assert [c["id"] for c in written["cases"]] == [c["id"] for c in plain["cases"]]
    assert written["probe"] == "uninit-read"


def _tmp_dirs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return tmp_path / "a", tmp_path / "b"


@pytest.fixture
def gpu_present(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))


def _planned(request: ProbeRequest, settings: Settings, workdir: Path) -> PlannedRun:
    planned = plan_run(request, workdir=workdir, settings=settings)
    assert isinstance(planned, PlannedRun), planned
    if planned.ports is not None:
        planned.ports.release()
    return planned


@pytest.mark.parametrize(
    ("probe", "params", "tool", "options", "quick"),
    [
        ("uninit-read", {}, Tool.INITCHECK, SanitizerOptions(), True),
        ("uninit-read", {}, Tool.MEMCHECK, SanitizerOptions(), True),
        ("uninit-read", {}, Tool.MEMCHECK, SanitizerOptions(leak_check="full"), False),  # reported as contexts end
        ("uninit-read", {}, Tool.INITCHECK, SanitizerOptions(track_unused_memory=True), False),  # so is unused memory
        ("uninit-read", {}, Tool.MEMCHECK, SanitizerOptions(detect_missing_module_unload=True), False),  # and modules
        ("command", {"argv": ["true"]}, Tool.MEMCHECK, SanitizerOptions(), False),  # the user's program: its own exit
    ],
)
def test_the_runner_asks_for_a_quick_exit_only_where_nothing_is_reported_at_teardown(
    probe: str,
    params: dict[str, object],
    tool: Tool,
    options: SanitizerOptions,
    quick: bool,
    tmp_path: Path,
    replay_settings: Settings,
    gpu_present: None,
) -> None:
    request = ProbeRequest(probe=probe, tool=tool, params=params, options=options)
    on, _ = _tmp_dirs(tmp_path)
    assert (QUICK_EXIT_FLAG in _planned(request, replay_settings, on).cmd) is quick


def test_a_replayed_run_with_a_quick_exit_finds_what_it_finds_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu_present: None, replay_settings: Settings
) -> None:
    _version.cache_clear()
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(RUNS / f"uninit-read-initcheck-{VERSIONS[1]}"))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "0")
    request = ProbeRequest(probe="uninit-read", tool=Tool.INITCHECK, confirm=False)
    on, off = _tmp_dirs(tmp_path)
    quick = run_probe(request, workdir=on, settings=replay_settings)
    # Asking for initcheck's unused-memory report keeps the full exit (the stand-in replays the same capture).
    teardown = request.model_copy(update={"options": SanitizerOptions(track_unused_memory=True)})
    plain = run_probe(teardown, workdir=off, settings=replay_settings)
    assert QUICK_EXIT_FLAG in quick.command and QUICK_EXIT_FLAG not in plain.command
    assert quick.outcome is plain.outcome is Outcome.FINDINGS
    assert [f.model_dump(include={"kind", "count", "kernel"}) for f in quick.findings] == [
        f.model_dump(include={"kind", "count", "kernel"}) for f in plain.findings
    ]
