"""Confirming the initcheck findings of a user's own pytest tests: the plugin's watch in the test process, what the
command probe makes of it, and the decision on a test's results (the whole path, sanitized run to verdicts, runs on
the GPU box: tests/gpu/test_confirm_tests_gpu.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from cuprobe.contract import CaseResult, Tool
from cuprobe.probes.base import Recorder
from cuprobe.probes.command import CommandParams
from cuprobe.probes.poison import PoisonPlan
from cuprobe.probes.pytest_run import plugin_env, watched
from cuprobe.service.models import Confirmation, Finding
from cuprobe.service.probing.confirm.decide import BareRun, decide
from cuprobe.service.sanitizer.flagged import FlaggedMemory


def test_the_watch_says_why_it_cannot_watch_a_process_without_cuda(tmp_path: Path) -> None:
    """The plugin in a confirming run, in an interpreter whose torch sees no GPU: the tests still run, and the
    watch's index says why nothing was watched."""
    (tmp_path / "test_t.py").write_text("def test_ok():\n    pass\n")
    env = plugin_env({"PATH": "/usr/bin:/bin"}, None, tmp_path / "report.jsonl",
                     {"mode": "log", "dir": str(tmp_path / "watch")})
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_t.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    index = json.loads((tmp_path / "watch" / "watch.json").read_text())
    assert index["error"] == "RuntimeError: torch sees no CUDA device"


def _watch_folder(folder: Path) -> None:
    """A watch index as the plugin writes it for one test: two named allocations, a snapshot and a kept result."""
    folder.mkdir()
    (folder / "1.bin").write_bytes(bytes([0xA5]) * 16)
    (folder / "2.bin").write_bytes(np.array([1.0, 2.0], dtype="<f4").tobytes())
    (folder / "watch.json").write_text(json.dumps({
        "mode": "sentinel",
        "allocations": [
            {"test": "t.py::test_a", "name": "aten.empty.memory_format@t.py:3#0", "ptr": 4096, "size": 16,
             "ordinal": 0},
            {"test": "t.py::test_a", "name": "aten.mul.Tensor@t.py:4#0", "ptr": 8192, "size": 16, "ordinal": 1},
        ],
        "reused_from": 2**64 - 1,
        "snapshots": {"t.py::test_a": {"aten.empty.memory_format@t.py:3#0": {
            "file": "1.bin", "checkpoint": "before aten.mul.Tensor at t.py:4"}}},
        "outputs": {"t.py::test_a": {"aten.empty.memory_format@t.py:3#0 -> aten.mul.Tensor@t.py:4#0 (0)": {
            "file": "2.bin", "dtype": "<f4", "shape": [2]}}},
        "left_out": 0,
        "error": None,
    }))


def test_what_the_watch_saw_becomes_the_cases_buffers_snapshots_and_results(tmp_path: Path) -> None:
    _watch_folder(tmp_path / "watch")
    plan = PoisonPlan(mode="sentinel", watch={"t.py::test_a": ["aten.empty.memory_format@t.py:3#0"]})
    recorder = Recorder("command", Tool.NONE, CommandParams(argv=["pytest"]), plan)
    case = recorder.case("t.py::test_a", CaseResult(id="x").expectation)
    watched(recorder, [case], tmp_path / "watch")
    assert [(a.name, a.start, a.size) for a in case.allocations] == [
        ("aten.empty.memory_format@t.py:3#0", 4096, 16), ("aten.mul.Tensor@t.py:4#0", 8192, 16)]
    label, raw = recorder.poison.snapshots["t.py::test_a"]["aten.empty.memory_format@t.py:3#0"]
    assert label == "before aten.mul.Tensor at t.py:4" and bytes(raw) == bytes([0xA5]) * 16


def test_a_finding_is_judged_on_what_the_reads_of_its_own_buffer_produced() -> None:
    """Two buffers of one test: the flagged one's reader made the same result under both poisons (benign), though
    another buffer's reader did not."""
    flagged = FlaggedMemory(records=4, unmapped=0, access_size=4, ranges={"a": [(0, 16)]})
    keep = {"a -> aten.where@t.py:5#0 (0)": np.zeros(4, "<f4")}
    other_ff = {"b -> aten.sum@t.py:9#0 (0)": np.array([np.nan], "<f4")}
    other_zero = {"b -> aten.sum@t.py:9#0 (0)": np.zeros(1, "<f4")}
    runs = {
        "ff#1": BareRun("ff#1", "ff", True, outputs={"c": {**keep, **other_ff}}),
        "ff#2": BareRun("ff#2", "ff", True, outputs={"c": {**keep, **other_ff}}),
        "zero": BareRun("zero", "zero", True, outputs={"c": {**keep, **other_zero}}),
        "sentinel": BareRun("sentinel", "sentinel", True,
                            snapshots={"c": {"a": ("before aten.where", np.full(16, 0xA5, np.uint8))}}),
    }
    finding = Finding(signature="s", tool=Tool.INITCHECK, kind="uninitialized-global-read", message="m", case="c")
    verdict, evidence = decide(finding, flagged, runs)
    assert verdict is Confirmation.BENIGN, evidence.reason


def test_the_confirmation_cost_benchmark_runs_at_a_small_size() -> None:
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, str(root / "bench" / "confirm_tests.py"), "--smoke"], cwd=root,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| test_one | clean |" in done.stdout and "gate exit 0" in done.stdout
