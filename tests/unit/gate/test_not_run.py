"""A test process that never ran a test is never `clean`: pytest node ids given from a cwd below the rootdir, pytest's
own not-run exit statuses, gtest's disabled tests and empty filters, ctest's DISABLED, WILL_FAIL and SKIP_RETURN_CODE
properties."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from cuprobe.contract import Tool
from cuprobe.service.config import Settings
from cuprobe.service.gate import sarif
from cuprobe.service.gate.github import workflow_commands
from cuprobe.service.gate.markdown import render
from cuprobe.service.gate.runs import run_local
from cuprobe.service.gate.suite import Suite, expand
from cuprobe.service.gate.verdict import judge
from cuprobe.service.models import Outcome
from cuprobe.service.owntests.discover import TestEntry, command_params, discover, with_xfail_report
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from tests.conftest import VERSIONS, capture
from tests.unit.gate.conftest import built_gtest


def _project(root: Path) -> Path:
    """A pytest project whose rootdir (pytest.ini) is above its tests folder."""
    tests = root / "tests"
    tests.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n")
    (tests / "test_x.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    return tests


@pytest.fixture
def replayed_clean_memcheck(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay stand-in runs the real command probe (and so the real test), then replays a clean memcheck run."""
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(VERSIONS[1], "memcheck_ok")))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "1")


def _results(suite: Suite, work: Path, settings: Settings) -> list[tuple[str, Outcome, str]]:
    return [(e.entry.case or "", r.outcome, r.message) for e in run_local(suite, work, settings) for r in e.results]


def test_node_ids_run_from_a_cwd_below_the_rootdir(tmp_path: Path) -> None:
    tests = _project(tmp_path)
    entry = TestEntry(name="x", kind="pytest", tool=Tool.MEMCHECK, paths=["test_x.py"], cwd=str(tests))
    found = discover(entry)
    assert [t.case for t in found] == ["tests/test_x.py::test_a", "tests/test_x.py::test_b"]  # as pytest names them
    assert found[0].argv[-1] == "test_x.py::test_a"  # as pytest finds them from the cwd
    ran = subprocess.run(found[0].argv, cwd=found[0].cwd, capture_output=True, text=True)
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout + ran.stderr
    beside = TestEntry(name="y", kind="pytest", tool=Tool.MEMCHECK, paths=["../tests"], cwd=str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere").mkdir()
    (other,) = [t for t in discover(beside) if t.case.endswith("test_b")]
    assert other.argv[-1] == "../tests/test_x.py::test_b"
    ran = subprocess.run(other.argv, cwd=other.cwd, capture_output=True, text=True)
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout + ran.stderr


def test_a_pytest_process_that_ran_no_test_is_an_error_even_with_any_exit(
    tmp_path: Path, replay_settings: Settings, replayed_clean_memcheck: None
) -> None:
    tests = _project(tmp_path)
    suite = expand(Suite.model_validate({"name": "s", "test": [{
        "name": "x", "kind": "pytest", "tool": "memcheck", "paths": ["test_x.py"], "cwd": str(tests),
        "expect_exit": "any"}]}))
    ran = _results(suite, tmp_path / "work", replay_settings)
    assert [o for _, o, _ in ran] == [Outcome.CLEAN, Outcome.CLEAN]  # the positive control: both tests really ran
    (tests / "test_x.py").unlink()  # now pytest finds no such file: exit 4, a usage error
    ran = _results(suite, tmp_path / "work2", replay_settings)
    assert [o for _, o, _ in ran] == [Outcome.PROBE_ERROR, Outcome.PROBE_ERROR]
    assert "exited 4 (pytest: usage error): the test did not run" in ran[0][2]


SKIPS = """import pytest


def test_runs():
    pass


@pytest.mark.skip(reason="no GPU")
def test_marked_skip():
    pass


def test_skips_itself():
    pytest.skip("needs two GPUs")


@pytest.mark.xfail(reason="known")
def test_expected_to_fail():
    assert False


@pytest.mark.xfail(run=False, reason="hangs the driver")
def test_xfail_never_run():
    assert False


@pytest.fixture
def no_second_gpu():
    pytest.xfail("needs two GPUs")


def test_xfail_before_its_body(no_second_gpu):
    assert False
"""


@pytest.mark.parametrize("per", ["test", "file"])
@pytest.mark.parametrize("colour", [False, True], ids=["plain", "coloured"])
def test_a_skipped_pytest_test_did_not_run_and_an_xfail_did(
    colour: bool, per: str, tmp_path: Path, replay_settings: Settings, replayed_clean_memcheck: None
) -> None:
    """A pytest test skipped ran none of the user's code under the sanitizer, so it is never clean (probe_error,
    could not run); an xfail ran its code and failed as it says it will; an xfail that never ran its body
    (`run=False`, or raised in a fixture) did not run. Run one per process, each process's summary says which; run
    as one file, pytest's report of each test does. With colour (`--color=yes` in the project's addopts) the
    summary is wrapped in escape codes: the same verdicts."""
    (tmp_path / "test_s.py").write_text(SKIPS)
    if colour:
        (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --color=yes\n")
    suite = expand(Suite.model_validate({"name": "s", "test": [
        {"name": "x", "kind": "pytest", "tool": "memcheck", "paths": ["test_s.py"], "cwd": str(tmp_path),
         "per": per}]}))
    assert len(suite.files) == (1 if per == "file" else 0)
    ran = {case.rsplit("::", 1)[1]: (o, m) for case, o, m in _results(suite, tmp_path / "work", replay_settings)}
    assert {k: o for k, (o, _) in ran.items()} == {
        "test_runs": Outcome.CLEAN,
        "test_marked_skip": Outcome.PROBE_ERROR,
        "test_skips_itself": Outcome.PROBE_ERROR,
        "test_expected_to_fail": Outcome.CLEAN,
        "test_xfail_never_run": Outcome.PROBE_ERROR,
        "test_xfail_before_its_body": Outcome.PROBE_ERROR,
    }
    said = ran["test_marked_skip"][1]
    if per == "test":
        assert "the command printed '1 skipped in" in said and "no test ran" in said
        assert "at setup of" in ran["test_xfail_before_its_body"][1]
    else:
        assert "skipped before the test body ran (Skipped: no GPU)" in said and "the test did not run" in said
        assert "needs two GPUs" in ran["test_xfail_before_its_body"][1]
    assert "[NOTRUN] hangs the driver" in ran["test_xfail_never_run"][1]


@pytest.mark.parametrize(
    ("given", "passed"),
    [
        ([], ["-rx"]),
        (["-x", "--tb=short"], ["-rx", "-x", "--tb=short"]),
        (["-rfE"], ["-rfEx"]),
        (["-r", "fE", "-v"], ["-r", "fEx", "-v"]),
        (["-rA"], ["-rA"]),
        (["-rxs"], ["-rxs"]),
    ],
)
def test_the_short_summary_names_xfails_whatever_report_the_test_asks_for(given: list[str], passed: list[str]) -> None:
    assert with_xfail_report(given) == passed


GTEST_SKIP = """
#include <gtest/gtest.h>
TEST(Gpu, Runs) { EXPECT_EQ(1 + 1, 2); }
TEST(Gpu, SkipsItself) { GTEST_SKIP() << "no GPU"; }
"""


def test_a_skipped_gtest_test_did_not_run(
    tmp_path: Path, replay_settings: Settings, replayed_clean_memcheck: None
) -> None:
    binary = built_gtest(tmp_path, GTEST_SKIP, "gpu_test")
    suite = expand(Suite.model_validate({"name": "s", "test": [
        {"name": "g", "kind": "gtest", "tool": "memcheck", "binary": str(binary), "env": {"GTEST_COLOR": "yes"}}]}))
    ran = _results(suite, tmp_path / "work", replay_settings)
    assert [(case, o) for case, o, _ in ran] == [("Gpu.Runs", Outcome.CLEAN), ("Gpu.SkipsItself", Outcome.PROBE_ERROR)]
    assert "[  SKIPPED ] 1 test, listed below" in ran[1][2] and "no test ran" in ran[1][2]


GTEST = """
#include <gtest/gtest.h>
TEST(Math, Adds) { EXPECT_EQ(1 + 1, 2); }
TEST(Math, DISABLED_Broken) { EXPECT_EQ(1, 2); }
TEST(DISABLED_Old, Anything) { EXPECT_EQ(1, 2); }
"""


@pytest.fixture(scope="module")
def gtest_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_gtest(tmp_path_factory.mktemp("gtest"), GTEST)


def test_gtest_disabled_tests_are_not_run_and_an_empty_filter_is_an_error(
    gtest_binary: Path, tmp_path: Path, replay_settings: Settings, replayed_clean_memcheck: None
) -> None:
    entry = TestEntry(name="m", kind="gtest", tool=Tool.MEMCHECK, binary=str(gtest_binary))
    assert [t.case for t in discover(entry)] == ["Math.Adds"]
    suite = expand(Suite.model_validate({"name": "s", "test": [
        {"name": "m", "kind": "gtest", "tool": "memcheck", "binary": str(gtest_binary)},
        {"name": "none", "kind": "gtest", "tool": "memcheck", "binary": str(gtest_binary), "per": "binary",
         "filter": "Nothing.*"}]}))
    ran = _results(suite, tmp_path / "work", replay_settings)
    assert [(case, o) for case, o, _ in ran] == [("Math.Adds", Outcome.CLEAN), ("math_test", Outcome.PROBE_ERROR)]
    assert "0 tests from 0 test suites ran" in ran[1][2] and "no test ran" in ran[1][2]


CMAKE = """
cmake_minimum_required(VERSION 3.16)
project(tiny CXX)
enable_testing()
add_executable(code code.cpp)
add_test(NAME passes COMMAND code 0)
add_test(NAME fails_by_design COMMAND code 1)
add_test(NAME switched_off COMMAND code 0)
add_test(NAME skips_itself COMMAND code 77)
set_tests_properties(fails_by_design PROPERTIES WILL_FAIL TRUE)
set_tests_properties(skips_itself PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(switched_off PROPERTIES DISABLED TRUE)
"""


def test_ctest_disabled_tests_are_left_out_and_will_fail_tests_may_exit_non_zero(tmp_path: Path) -> None:
    if not shutil.which("cmake"):
        pytest.fail("cmake is not installed (.ci/run installs the build tools these tests use)")
    (tmp_path / "CMakeLists.txt").write_text(CMAKE)
    (tmp_path / "code.cpp").write_text(
        textwrap.dedent("#include <cstdlib>\nint main(int c, char** v) { return std::atoi(v[1]); }\n")
    )
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(build)], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    entry = TestEntry(name="t", kind="ctest", tool=Tool.MEMCHECK, build_dir=str(build))
    found = discover(entry)
    assert [t.case for t in found] == ["passes", "fails_by_design", "skips_itself"]
    params = [command_params(entry, t) for t in found]
    assert [p["expect_exit"] for p in params] == [0, None, 0]
    assert 77 in params[2]["not_run_exits"] and 77 not in params[0]["not_run_exits"]


CMAKE_OUTPUT = """
cmake_minimum_required(VERSION 3.16)
project(tiny CXX)
enable_testing()
add_executable(say say.cpp)
add_test(NAME skips_by_output COMMAND say 0 "SKIPPING: no gpu")
add_test(NAME passes_by_output COMMAND say 1 "all good")
add_test(NAME fails_by_output COMMAND say 0 "FAILED: 3 wrong")
add_test(NAME needs_its_env COMMAND say 0 env)
set_tests_properties(skips_by_output PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPING")
set_tests_properties(passes_by_output PROPERTIES PASS_REGULAR_EXPRESSION "all good")
set_tests_properties(fails_by_output PROPERTIES FAIL_REGULAR_EXPRESSION "FAILED")
set_tests_properties(needs_its_env PROPERTIES ENVIRONMENT_MODIFICATION "CT_MOD=set:yes;PATH=path_list_append:/x")
"""

SAY = """#include <cstdio>
#include <cstdlib>
#include <cstring>
int main(int c, char** v) {
  if (c > 2 && !std::strcmp(v[2], "env")) {
    const char* m = std::getenv("CT_MOD");
    return m && !std::strcmp(m, "yes") ? 0 : 4;
  }
  if (c > 2) std::printf("%s\\n", v[2]);
  return std::atoi(v[1]);
}
"""


def test_ctests_output_patterns_and_environment_modifications_decide_as_ctest_does(
    tmp_path: Path, replay_settings: Settings, replayed_clean_memcheck: None
) -> None:
    """SKIP_REGULAR_EXPRESSION: skipped, so not run (it read clean); PASS_REGULAR_EXPRESSION: the pattern decides, not
    the exit status (it was a finding); FAIL_REGULAR_EXPRESSION: a finding (it read clean); ENVIRONMENT_MODIFICATION
    applied (it exited 4). `ctest` itself is the control for each verdict."""
    if not shutil.which("cmake"):
        pytest.fail("cmake is not installed (.ci/run installs the build tools these tests use)")
    (tmp_path / "CMakeLists.txt").write_text(CMAKE_OUTPUT)
    (tmp_path / "say.cpp").write_text(SAY)
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(build)], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    ctest = subprocess.run(["ctest", "--test-dir", str(build)], capture_output=True, text=True).stdout
    for name, verdict in (("skips_by_output", "Skipped"), ("passes_by_output", "Passed"),
                          ("fails_by_output", "Failed"), ("needs_its_env", "Passed")):  # fmt: skip
        assert any(name in line and verdict in line for line in ctest.splitlines()), ctest
    suite = expand(Suite.model_validate({"name": "s", "test": [
        {"name": "t", "kind": "ctest", "tool": "memcheck", "build_dir": str(build)}]}))
    ran = {case: (o, m) for case, o, m in _results(suite, tmp_path / "work", replay_settings)}
    assert {case: o for case, (o, _) in ran.items()} == {
        "skips_by_output": Outcome.PROBE_ERROR,
        "passes_by_output": Outcome.CLEAN,
        "fails_by_output": Outcome.FINDINGS,
        "needs_its_env": Outcome.CLEAN,
    }, ran
    assert "'SKIPPING'" in ran["skips_by_output"][1] and "no test ran" in ran["skips_by_output"][1]
    assert "matched the failure pattern: 'FAILED'" in ran["fails_by_output"][1]


def test_a_test_past_its_own_time_limit_is_a_timeout(
    tmp_path: Path, replay_settings: Settings, replayed_clean_memcheck: None
) -> None:
    sleep = shutil.which("sleep")
    assert sleep
    suite = expand(Suite.model_validate({"name": "s", "test": [
        {"name": "slow", "kind": "command", "tool": "memcheck", "argv": [sleep, "30"], "timeout_s": 1},
        {"name": "quick", "kind": "command", "tool": "memcheck", "argv": [sleep, "0"], "timeout_s": 10}]}))
    ran = _results(suite, tmp_path / "work", replay_settings)
    assert [(case, o) for case, o, _ in ran] == [("slow", Outcome.TIMEOUT), ("quick", Outcome.CLEAN)]
    assert "exceeded its wall-clock limit of 1 s" in ran[0][2]


def test_what_could_not_run_is_named_by_its_test_in_every_output(
    tmp_path: Path, replay_settings: Settings, replayed_clean_memcheck: None
) -> None:
    """A [[test]] process that did not run is named by its test (node id) beside the generated entry name, in the
    summary, the workflow commands and SARIF: `x.0001` alone does not say which test to look at."""
    (tmp_path / "test_s.py").write_text(SKIPS)
    suite = expand(Suite.model_validate({"name": "s", "test": [
        {"name": "x", "kind": "pytest", "tool": "memcheck", "paths": ["test_s.py"], "cwd": str(tmp_path)}]}))
    report = judge(suite, run_local(suite, tmp_path / "work", replay_settings), None)
    assert report.exit_code == 3
    skipped = next(n for n in report.not_run if n.case and n.case.endswith("test_marked_skip"))
    assert skipped.label == f"{skipped.entry} (test_s.py::test_marked_skip)"
    assert f"| {skipped.label} |" in render(report)
    escaped = skipped.label.replace(":", "%3A")  # a workflow command's title escapes its colons
    assert any(f"{escaped} could not run" in line for line in workflow_commands(report))
    (invocation,) = sarif.build(report)["runs"][0]["invocations"]
    assert any(skipped.label in n["message"]["text"] for n in invocation["toolExecutionNotifications"])
