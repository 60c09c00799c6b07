"""A machine without googletest skips the gtest tests with the reason; CI (CUPROBE_REQUIRE_GTEST=1) fails them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
GTEST_TEST = "tests/unit/gate/test_own_code.py::test_gtest_discovery_lists_every_test_and_filters_each_process"


def _run_without_gtest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The gtest discovery test, with a g++ that sees no system headers or libraries (as where libgtest-dev is not
    installed: g++ then cannot find gtest/gtest.h)."""
    real = shutil.which("g++")
    if real is None:
        pytest.skip("g++ is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "g++").write_text(f'#!/bin/sh\nexec {real} --sysroot={tmp_path / "empty"} "$@"\n')
    (bin_dir / "g++").chmod(0o755)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", GTEST_TEST],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CUPROBE_REQUIRE_GTEST": "", **env},
    )


def test_without_googletest_the_gtest_tests_skip_saying_what_to_install(tmp_path: Path) -> None:
    done = _run_without_gtest(tmp_path)
    assert "1 skipped" in done.stdout, done.stdout + done.stderr
    assert "googletest is not installed: apt-get install -y libgtest-dev" in done.stdout


def test_ci_requiring_googletest_fails_them_instead(tmp_path: Path) -> None:
    done = _run_without_gtest(tmp_path, CUPROBE_REQUIRE_GTEST="1")
    assert done.returncode == 1 and "1 skipped" not in done.stdout, done.stdout + done.stderr
    assert "must run here (CUPROBE_REQUIRE_GTEST=1)" in done.stdout
