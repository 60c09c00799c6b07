"""Gate fixtures: suites written to disk, and the replay stand-in answering for several probes at once."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cuprobe.service.cli.main import app
from cuprobe.service.probing import runner
from cuprobe.service.sanitizer.locate import _version
from tests.conftest import BOX_ROOT, REPLAY, RUNS, VERSIONS, capture
from tests.system_packages import missing_package

# The initcheck positive control as the H200 ran it (uninit-read, 24 records at kernels/uninit_read.cu:6).
CONTROL = {2025: RUNS / f"uninit-read-initcheck-{VERSIONS[0]}", 2026: RUNS / f"uninit-read-initcheck-{VERSIONS[1]}"}
# A clean initcheck run captured on the H200, replayed around the real selftest probe (run for real as its child).
INITCHECK_OK = {2025: capture(VERSIONS[0], "initcheck_ok"), 2026: capture(VERSIONS[1], "initcheck_ok")}
# With this set to 1 (CI), a missing googletest fails the gtest tests instead of skipping them.
REQUIRE_GTEST = "CUPROBE_REQUIRE_GTEST"
# What g++ says where googletest's header or library is not installed.
GTEST_MISSING = ("gtest/gtest.h: No such file", "cannot find -lgtest")

BASE_SUITE = """
name = "gate-test"

[[probe]]
name = "initcheck-control"
probe = "uninit-read"
tool = "initcheck"
control = true

[[probe]]
name = "selftest-initcheck"
probe = "selftest"
tool = "initcheck"
params = { behaviour = "ok" }
"""

VIOLATE = """
[[probe]]
name = "selftest-bare"
probe = "selftest"
tool = "none"
params = { behaviour = "violate" }
"""

# The same captured initcheck run as the control, but in an entry not marked control: its finding is the
# suite's own code failing (a scenario built from a real capture, not a separate H200 run).
PRODUCT = """
[[probe]]
name = "uninit-product"
probe = "uninit-read"
tool = "initcheck"
"""

VIOLATION_SIGNATURE = "none|expectation-violation|selftest|violate"
UNINIT_SIGNATURE = "initcheck|uninitialized-global-read|double_all|kernels/uninit_read.cu:6|global-read-4"

Gate = Callable[..., Result]


def use_replay(mp: pytest.MonkeyPatch, year: int = 2026, control: Path | None = None) -> None:
    """Point cuprobe at the replay stand-in with the `year` sanitizer's captures (and a GPU, the only mock)."""
    _version.cache_clear()
    mp.setattr(runner, "gpu_facts", lambda: ("NVIDIA H200", "580.159.04", "13.0"))  # the captures' GPU
    mp.setenv("CUPROBE_SANITIZER_PATH", str(REPLAY))
    mp.setenv("CUPROBE_SOURCE_ROOTS", json.dumps([BOX_ROOT]))
    mp.setenv("CUPROBE_REPLAY_CASE", str(CONTROL[year]))  # its version.txt answers --version
    mapping = {
        "uninit-read initcheck": {"case": str(control or CONTROL[year]), "target": False},
        "selftest initcheck": {"case": str(INITCHECK_OK[year]), "target": True},
        # 13 values of n x 3 variants in one process: one signature in 10 cases (2026 sanitizer only).
        "narrow-matmul initcheck": {"case": str(RUNS / f"narrow-matmul-initcheck-{VERSIONS[1]}"), "target": False},
    }
    mp.setenv("CUPROBE_REPLAY_MAP", json.dumps(mapping))


def broken_control(tmp_path: Path) -> Path:
    """A broken instrument from real files: the clean memcheck run's output where initcheck had to fire."""
    case = tmp_path / "broken-control"
    shutil.copytree(RUNS / f"uninit-read-memcheck-{VERSIONS[1]}", case)
    shutil.copy(CONTROL[2026] / "result.json", case / "result.json")
    return case


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """The replay stand-in in place; call `replay(year, control=FOLDER)` to pick other captures."""
    use_replay(monkeypatch)
    return lambda year=2026, control=None: use_replay(monkeypatch, year, control)


def run_gate(where: Path, text: str, *args: str) -> Result:
    """Write `text` as where/suite.toml and run `cuprobe gate SUITE --local --summary where/summary.md ARGS`."""
    suite = where / "suite.toml"
    suite.write_text(text)
    return CliRunner().invoke(app, ["gate", str(suite), "--local", "--summary", str(where / "summary.md"), *args])


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Gate:
    """`gate(suite_text, *args)`: run_gate in this test's tmp_path, outside GitHub Actions."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return lambda text, *args: run_gate(tmp_path, text, *args)


def summary(tmp_path: Path) -> str:
    return (tmp_path / "summary.md").read_text()


def built_gtest(where: Path, source: str, name: str = "math_test") -> Path:
    """A real gtest binary built from `source` with Debian's googletest (.ci/run installs it); the test skips where
    g++ or googletest is missing, unless CUPROBE_REQUIRE_GTEST=1."""
    if shutil.which("g++") is None:
        missing_package("g++ is not installed: apt-get install -y g++ libgtest-dev (as .ci/run does)", REQUIRE_GTEST)
    (where / "t.cpp").write_text(source)
    binary = where / name
    built = subprocess.run(
        ["g++", "-std=c++17", str(where / "t.cpp"), "-o", str(binary), "-lgtest", "-lgtest_main", "-pthread"],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0 and any(said in built.stderr for said in GTEST_MISSING):
        missing_package("googletest is not installed: apt-get install -y libgtest-dev (as .ci/run does)", REQUIRE_GTEST)
    assert built.returncode == 0, built.stderr
    return binary
