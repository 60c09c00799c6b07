"""The user's own tests in a suite: discovery (pytest, ctest, gtest), the suite round-trip, env, fail_on."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.gate.runs import EntryRuns, run_local
from cuprobe.service.gate.suite import Suite, SuiteError, expand, load_suite
from cuprobe.service.gate.verdict import Status, judge
from cuprobe.service.models import Finding, Outcome, RunResult
from cuprobe.service.owntests.discover import DiscoveryError, TestEntry, discover
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from tests.conftest import VERSIONS, capture
from tests.unit.gate.conftest import built_gtest


def _pytest_package(root: Path) -> Path:
    tests = root / "pkg_tests"
    tests.mkdir()
    (tests / "test_ops.py").write_text(
        textwrap.dedent(
            """
            import pytest

            def test_add():
                assert 1 + 1 == 2

            @pytest.mark.cuda
            @pytest.mark.parametrize("n", [1, 64])
            def test_scaled(n):
                assert n > 0

            class TestGroup:
                @pytest.mark.cuda
                def test_inner(self):
                    pass
            """
        )
    )
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    cuda: needs a GPU\n")
    return tests


def test_pytest_discovery_lists_node_ids_by_path_and_marker(tmp_path: Path) -> None:
    _pytest_package(tmp_path)
    entry = TestEntry(name="ops", kind="pytest", tool=Tool.MEMCHECK, paths=["pkg_tests"], cwd=str(tmp_path))
    every = discover(entry)
    assert [t.case for t in every] == [
        "pkg_tests/test_ops.py::test_add",
        "pkg_tests/test_ops.py::test_scaled[1]",
        "pkg_tests/test_ops.py::test_scaled[64]",
        "pkg_tests/test_ops.py::TestGroup::test_inner",
    ]
    assert every[1].argv == [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rx", every[1].case]
    assert every[1].cwd == str(tmp_path)
    marked = discover(entry.model_copy(update={"markers": "cuda"}))
    assert [t.case.split("::", 1)[1] for t in marked] == ["test_scaled[1]", "test_scaled[64]", "TestGroup::test_inner"]


def test_pytest_discovery_that_fails_says_so(tmp_path: Path) -> None:
    (tmp_path / "test_broken.py").write_text("import no_such_module_here\n")
    entry = TestEntry(name="broken", kind="pytest", tool=Tool.MEMCHECK, paths=["."], cwd=str(tmp_path))
    with pytest.raises(DiscoveryError, match="no_such_module_here"):
        discover(entry)


CMAKE = """
cmake_minimum_required(VERSION 3.16)
project(tiny CXX)
enable_testing()
add_executable(adder adder.cpp)
add_executable(other other.cpp)
add_test(NAME adds COMMAND adder 2 3)
add_test(NAME adds_again COMMAND adder 4 5)
add_test(NAME other_one COMMAND other)
set_tests_properties(adds PROPERTIES ENVIRONMENT "TINY_MODE=cuda")
"""


@pytest.fixture(scope="module")
def cmake_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("tiny")
    (src / "CMakeLists.txt").write_text(CMAKE)
    (src / "adder.cpp").write_text("#include <cstdlib>\nint main(int c, char** v) { return c == 3 ? 0 : 1; }\n")
    (src / "other.cpp").write_text("int main() { return 0; }\n")
    build = src / "build"
    subprocess.run(["cmake", "-S", str(src), "-B", str(build)], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    return build


def test_ctest_discovery_gives_each_test_its_command_cwd_and_environment(cmake_build: Path) -> None:
    entry = TestEntry(name="tiny", kind="ctest", tool=Tool.MEMCHECK, build_dir=str(cmake_build), env={"X": "1"})
    tests = discover(entry)
    assert [t.case for t in tests] == ["adds", "adds_again", "other_one"]
    assert tests[0].argv == [str(cmake_build / "adder"), "2", "3"]
    assert tests[0].env == {"TINY_MODE": "cuda", "X": "1"} and tests[1].env == {"X": "1"}
    assert Path(tests[0].cwd) == cmake_build
    only = discover(entry.model_copy(update={"regex": "^adds$"}))
    assert [t.case for t in only] == ["adds"]
    per_binary = discover(entry.model_copy(update={"per": "binary"}))
    assert [(t.case, t.argv) for t in per_binary] == [
        ("adder", [str(cmake_build / "adder")]),
        ("other", [str(cmake_build / "other")]),
    ]


GTEST = """
#include <gtest/gtest.h>
TEST(Math, Adds) { EXPECT_EQ(1 + 1, 2); }
TEST(Math, Subtracts) { EXPECT_EQ(2 - 1, 1); }
class Sized : public ::testing::TestWithParam<int> {};
TEST_P(Sized, Positive) { EXPECT_GT(GetParam(), 0); }
INSTANTIATE_TEST_SUITE_P(Small, Sized, ::testing::Values(1, 64));
"""


@pytest.fixture(scope="module")
def gtest_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_gtest(tmp_path_factory.mktemp("gtest"), GTEST)


def test_gtest_discovery_lists_every_test_and_filters_each_process(gtest_binary: Path) -> None:
    entry = TestEntry(name="math", kind="gtest", tool=Tool.MEMCHECK, binary=str(gtest_binary))
    tests = discover(entry)
    names = ["Math.Adds", "Math.Subtracts", "Small/Sized.Positive/0", "Small/Sized.Positive/1"]
    assert [t.case for t in tests] == names
    assert tests[2].argv == [str(gtest_binary), "--gtest_filter=Small/Sized.Positive/0"]
    ran = subprocess.run(tests[2].argv, capture_output=True, text=True)
    assert ran.returncode == 0 and "1 test from 1 test suite ran" in ran.stdout
    only = discover(entry.model_copy(update={"filter": "Math.*"}))
    assert [t.case for t in only] == ["Math.Adds", "Math.Subtracts"]
    whole = discover(entry.model_copy(update={"per": "binary"}))
    assert [(t.case, t.argv) for t in whole] == [("math_test", [str(gtest_binary)])]


SUITE = """
name = "own"
fail_on = "error"
options = {{ nvtx = true }}

[[probe]]
name = "memcheck-control"
probe = "planted"
tool = "memcheck"
params = {{ defect = "oob" }}
control = true

[[test]]
name = "ops"
kind = "pytest"
tool = "memcheck"
paths = ["pkg_tests"]
cwd = "{cwd}"
env = {{ PYTORCH_NO_CUDA_MEMORY_CACHING = "1" }}
timeout_s = 120
repeats = 2
options = {{ leak_check = "full", padding = 512 }}

[[test]]
name = "race"
kind = "command"
tool = "racecheck"
argv = ["./warp_error"]
fail_on = "warning"
control = true
expect = "shared-memory-race"
options = {{ racecheck_report = "hazard" }}
"""


def test_suite_round_trip_discovers_tests_into_command_probe_entries(tmp_path: Path) -> None:
    _pytest_package(tmp_path)
    path = tmp_path / "own.toml"
    path.write_text(SUITE.format(cwd=tmp_path))
    suite = load_suite(path)
    assert suite.test[0].options.key() == "leak-check=full,padding=512,nvtx=yes"
    full = expand(suite, str(tmp_path))
    ops = [e for e in full.entries if e.name.startswith("ops.")]
    assert ops[0].case == "pkg_tests/test_ops.py::test_add" and len(ops) == 4
    first = ops[0]
    assert (first.probe, first.tool, first.repeats, first.timeout_s) == ("command", Tool.MEMCHECK, 2, 180)
    assert first.params["env"] == {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"} and first.params["timeout_s"] == 120
    assert first.params["case"] == first.case and first.request().options.padding == 512
    race = next(e for e in full.entries if e.name.startswith("race."))
    assert race.control and race.params["expect"] == "shared-memory-race" and full.fail_on_of(race) == "warning"
    assert race.params["argv"] == ["./warp_error"] and race.params["cwd"] == str(tmp_path)


def test_suite_refuses_an_option_for_another_tool(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(SUITE.format(cwd=tmp_path).replace('racecheck_report = "hazard"', 'leak_check = "full"'))
    refusal = r"\[\[test\]\] race: --leak-check is a memcheck option.*not one for racecheck"
    with pytest.raises(SuiteError, match=refusal):
        load_suite(path)


def test_a_test_entry_without_its_fields_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(SUITE.format(cwd=tmp_path).replace('paths = ["pkg_tests"]', ""))
    with pytest.raises(SuiteError, match="a pytest entry needs `paths`"):
        load_suite(path)


def _warning_report(fail_on: str) -> Status:
    suite = Suite.model_validate({"name": "s", "fail_on": fail_on, "probe": [
        {"name": "race", "probe": "command", "tool": "racecheck", "params": {"argv": ["x"]}}]})
    finding = Finding(signature="racecheck|shared-memory-race|k|warning", tool=Tool.RACECHECK,
                      kind="shared-memory-race", message="m", severity="warning", count=248)
    result = RunResult(probe="command", tool=Tool.RACECHECK, outcome=Outcome.FINDINGS, message="m", findings=[finding])
    report = judge(suite, [EntryRuns(suite.entries[0], [result])], None)
    return report.findings[0].status, report.exit_code  # type: ignore[return-value]


def test_the_gate_fails_on_what_the_suite_says() -> None:
    assert _warning_report("error") == (Status.WARNING, 0)
    assert _warning_report("warning") == (Status.NEW, 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_per_entry_env_reaches_the_test_process(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replay_settings: Settings
) -> None:
    # The replay stand-in runs the real command probe (and so the real command), then replays a clean memcheck run.
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(version, "memcheck_ok")))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "1")
    sh = shutil.which("sh")
    assert sh
    suite = Suite.model_validate({"name": "env", "test": [{
        "name": "env", "kind": "command", "tool": "memcheck", "cwd": str(tmp_path),
        "argv": [sh, "-c", 'printf %s "$GTEST_CUDF_RMM_MODE" > seen.txt'], "env": {"GTEST_CUDF_RMM_MODE": "cuda"}}]})
    (runs,) = run_local(expand(suite), tmp_path / "work", replay_settings)
    (result,) = runs.results
    assert result.outcome is Outcome.CLEAN, result.message
    assert (tmp_path / "seen.txt").read_text() == "cuda"
    assert result.cases[0].id == "env"


def test_without_a_gpu_the_gate_says_could_not_run(tmp_path: Path, replay_settings: Settings) -> None:
    _pytest_package(tmp_path)
    suite = Suite.model_validate({"name": "s", "test": [
        {"name": "ops", "kind": "pytest", "tool": "memcheck", "paths": ["pkg_tests"], "cwd": str(tmp_path)}]})
    runs = run_local(expand(suite), tmp_path / "work", replay_settings)
    results = [r for entry in runs for r in entry.results]
    assert len(results) == 4 and {r.outcome for r in results} == {Outcome.UNAVAILABLE}
    assert "no CUDA device" in results[0].message


def test_a_control_expecting_a_kind_no_finding_can_have_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """A finding's kind is a slug (`shared-memory-race`); `expect` written as the sanitizer prints it could never
    match, so the control would fail every run: refused at load, with the slug it meant."""
    path = tmp_path / "bad.toml"
    path.write_text(SUITE.format(cwd=tmp_path).replace('"shared-memory-race"', '"Shared memory race"'))
    with pytest.raises(SuiteError, match=r"\[\[test\]\] race.*'Shared memory race' is not a finding kind.*"
                       r"did you mean 'shared-memory-race'"):
        load_suite(path)
