"""The probe side of confirmation: poisoned runs keep results and snapshots; others refuse to poison."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cuprobe.contract import Expectation, Tool
from cuprobe.kernels.poison_alloc import FREE, MALLOC, build
from cuprobe.probes.base import Recorder
from cuprobe.probes.poison import PoisonLog, PoisonPlan, digest, dump_path
from cuprobe.probes.selftest import SelftestParams

ROOT = Path(__file__).resolve().parents[3]


def test_a_probe_that_owns_no_memory_refuses_to_poison(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "cuprobe.probes", "selftest", "--out", str(out), "--poison", "ff"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert json.loads(out.read_text())["error"].startswith("refused: --poison ff: this probe does not poison")


def test_unpoisoned_runs_keep_nothing_and_run_no_reader() -> None:
    log = PoisonLog()
    called = []
    log.output("c", "y", lambda: called.append(1))
    log.checkpoint("c", "here", y=lambda: called.append(2))
    assert not log.active and called == [] and not log.outputs and not log.snapshots


def test_only_the_sentinel_run_snapshots_and_only_watched_buffers() -> None:
    ff = PoisonLog(PoisonPlan(mode="ff", watch={"c": ["w"]}))
    ff.checkpoint("c", "before k", w=lambda: np.zeros(4, np.uint8))
    assert ff.snapshots == {}
    sentinel = PoisonLog(PoisonPlan(mode="sentinel", watch={"c": ["w"]}))
    sentinel.checkpoint("c", "before k", w=lambda: np.full(3, 0xA5, np.uint8), x=lambda: 1 / 0)
    sentinel.checkpoint("c", "later", w=lambda: np.zeros(3, np.uint8))  # the first checkpoint of a buffer counts
    (label, raw) = sentinel.snapshots["c"]["w"]
    assert label == "before k" and raw.tolist() == [0xA5] * 3


def test_results_and_snapshots_round_trip_through_result_json(tmp_path: Path) -> None:
    recorder = Recorder("selftest", Tool.NONE, SelftestParams(), PoisonPlan(mode="sentinel", watch={"c": ["w"]}))
    recorder.case("c", Expectation())
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    recorder.poison.output("c", "y", lambda: y)
    recorder.poison.checkpoint("c", "before k", w=lambda: np.full(8, 0xA5, np.uint8))
    out = tmp_path / "result.json"
    recorder.write(out)
    index = json.loads(out.read_text())["context"]["poison"]
    assert index["mode"] == "sentinel" and index["fill"] == 0xA5
    assert index["outputs"]["c"]["digest"] == digest({"y": y}) != digest({"y": y + 1})
    arrays = np.load(dump_path(out))
    assert np.array_equal(arrays[index["outputs"]["c"]["arrays"]["y"]], y)
    assert index["snapshots"]["c"]["w"]["checkpoint"] == "before k"


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler on this machine")
def test_the_torch_poisoning_allocator_builds_and_exports_what_torch_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUPROBE_CACHE_DIR", str(tmp_path))
    lib = ctypes.CDLL(str(build()))
    assert hasattr(lib, MALLOC) and hasattr(lib, FREE)
    lib.cuprobe_set_poison(0xFF)
    assert lib.cuprobe_poison_byte() == 0xFF
    getattr(lib, MALLOC).restype = ctypes.c_void_p
    if not Path("/dev/nvidiactl").exists():  # no driver here: the allocator says so by returning NULL
        assert getattr(lib, MALLOC)(ctypes.c_ssize_t(64), 0, None) is None
    assert build() == next(tmp_path.glob("poison_alloc-*.so"))  # built once, then reused
