"""`python -m cuprobe.probes ... --then POISON=FILE`: one process runs the probe again with another poison once a
run has completed, each run writing its own result (the confirmation's re-runs sharing a process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
PARAMS = json.dumps({"backends": ["torch-cpu"], "m": 16, "k": 32, "n": 8})


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cuprobe.probes", *args],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=300,
    )


def test_each_run_of_the_process_writes_its_own_complete_result_with_its_poison(tmp_path: Path) -> None:
    ff, zero, sentinel = (tmp_path / name / "result.json" for name in ("ff", "zero", "sentinel"))
    sentinel.parent.mkdir()  # a folder of each re-run's own, made by its caller
    zero.parent.mkdir()
    ff.parent.mkdir()
    done = _probe(
        "bf16-matmul", "--params", PARAMS, "--out", str(ff), "--poison", "ff", "--watch", "all",
        "--then", f"zero={zero}", "--then", f"sentinel={sentinel}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = {path.parent.name: json.loads(path.read_text()) for path in (ff, zero, sentinel)}
    for mode, result in results.items():
        assert result["complete"] and result["context"]["poison"]["mode"] == mode
        assert [case["id"] for case in result["cases"]] == ["torch-cpu"]
    # The same computation in each run: its output's digest is the same under every poison.
    digests = {r["context"]["poison"]["outputs"]["torch-cpu"]["digest"] for r in results.values()}
    assert len(digests) == 1
    # Each run's arrays lie beside its own result; --watch applies to every run of the process.
    values = []
    for path, result in zip((ff, zero, sentinel), results.values(), strict=True):
        index = result["context"]["poison"]
        assert index["watch_all"] and index["file"] == "result.json.poison.npz"
        with np.load(path.with_name(index["file"])) as arrays:
            values.append(arrays[index["outputs"]["torch-cpu"]["arrays"]["c"]])
    assert values[0].shape == (16, 8) and all(np.array_equal(values[0], v) for v in values)


def test_a_bad_then_is_refused_before_any_run(tmp_path: Path) -> None:
    out, later = tmp_path / "a.json", tmp_path / "b.json"
    for then in ("bogus=" + str(later), "zero", "zero="):
        done = _probe("bf16-matmul", "--params", PARAMS, "--out", str(out), "--poison", "ff", "--then", then)
        assert done.returncode == 2
        error = json.loads(out.read_text())["error"]
        assert error.startswith("bad --watch or --then for probe bf16-matmul") and "POISON=FILE" in error
        assert not later.exists()


def test_a_probe_that_cannot_poison_refuses_a_later_poison_too(tmp_path: Path) -> None:
    out, later = tmp_path / "a.json", tmp_path / "b.json"
    done = _probe("selftest", "--out", str(out), "--then", f"ff={later}")
    assert done.returncode == 2
    assert json.loads(out.read_text())["error"].startswith("refused: --poison ff: this probe does not poison")
    assert not later.exists()
