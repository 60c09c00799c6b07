"""Input the gate cannot use is refused with exit 2 before anything runs, naming the problem: outputs it could not
write, a missing suppressions file, a test time limit past the sanitizer's margin, generated names that clash,
a ctest regex ctest refuses. Never a traceback's exit 1, which CI reads as new findings."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.contract import Tool
from cuprobe.service.cli.main import app
from cuprobe.service.owntests.discover import DiscoveryError, TestEntry, discover
from tests.unit.gate.conftest import BASE_SUITE, Gate


def _refused(result: object, says: str) -> None:
    output = getattr(result, "output", "")
    assert getattr(result, "exit_code", None) == 2, output
    assert says in " ".join(output.split()) and "Traceback" not in output


@pytest.mark.parametrize("option", ["--junit", "--sarif", "--summary"])
def test_an_output_in_a_missing_directory_is_refused_before_running(gate: Gate, tmp_path: Path, option: str) -> None:
    target = tmp_path / "no" / "dir" / "out"
    _refused(gate(BASE_SUITE, option, str(target)), f"{option} {target}: the directory {target.parent} does not exist")
    assert not (tmp_path / "summary.md").exists() or option == "--summary"  # nothing ran, nothing was summarised


def test_an_output_that_is_a_directory_is_refused(gate: Gate, tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    _refused(gate(BASE_SUITE, "--junit", str(tmp_path / "ci")), "is a directory; name a file")


def test_an_output_that_is_the_suite_the_baseline_or_another_output_is_refused(gate: Gate, tmp_path: Path) -> None:
    """An output path that names a file the gate reads, or another output, would overwrite it: refused before
    anything runs, and the file is left as it was."""
    baseline = tmp_path / "b.toml"
    baseline.write_text("version = 1\n")
    suite = tmp_path / "suite.toml"
    _refused(gate(BASE_SUITE, "--junit", str(suite)), f"--junit {suite} is the suite too: name another file")
    assert suite.read_text() == BASE_SUITE
    _refused(
        gate(BASE_SUITE, "--baseline", str(baseline), "--sarif", str(baseline)),
        f"--sarif {baseline} is the baseline too",
    )
    _refused(
        gate(BASE_SUITE, "--update-baseline", "--baseline", str(baseline), "--sarif", str(baseline)),
        f"--update-baseline {baseline} is the file --sarif writes too",
    )
    assert baseline.read_text() == "version = 1\n"
    twice = tmp_path / "out.xml"
    _refused(gate(BASE_SUITE, "--junit", str(twice), "--sarif", str(twice)), "is the file --junit writes too")
    (tmp_path / "plain").write_text("x")
    _refused(gate(BASE_SUITE, "--workdir", str(tmp_path / "plain")), "--workdir")


PASSING = """
name = "passes"

[[probe]]
name = "selftest-bare"
probe = "selftest"
tool = "none"
params = { behaviour = "ok" }
"""


def test_a_report_that_cannot_be_written_at_the_end_is_named_and_never_reads_as_a_pass(gate: Gate) -> None:
    """A write that fails only when it happens (a full disk: /dev/full) is said after the verdict, with no traceback;
    a pass then exits 2, not 0, so CI does not read it as a pass without its report."""
    full = Path("/dev/full")
    if not full.exists():
        pytest.fail("/dev/full is missing: the test needs a file whose writes fail")
    passed = gate(PASSING)
    assert passed.exit_code == 0, passed.output
    result = gate(PASSING, "--junit", str(full))
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "not written: --junit /dev/full: No space left on device" in " ".join(result.output.split())
    assert "pass" in result.output.lower()  # the verdict is still shown


def test_a_baseline_to_write_in_a_missing_directory_is_refused(gate: Gate, tmp_path: Path) -> None:
    target = tmp_path / "no" / "b.toml"
    _refused(gate(BASE_SUITE, "--update-baseline", "--baseline", str(target)), "--update-baseline")


def test_a_missing_local_suppressions_file_names_its_entry(gate: Gate) -> None:
    named = 'name = "gate-test"\n'
    suite = BASE_SUITE.replace(named, named + 'options = { suppressions = "nosuch.xml" }\n')
    _refused(gate(suite), "initcheck-control: suppressions file nosuch.xml does not exist")


def test_a_test_time_limit_past_the_sanitizers_margin_is_refused_at_load(gate: Gate) -> None:
    suite = BASE_SUITE + '\n[[test]]\nname = "a"\nkind = "command"\ntool = "initcheck"\nargv = ["true"]\n'
    _refused(gate(suite + "timeout_s = 86400\n"), "timeout_s")


def test_a_probe_named_like_a_test_process_is_refused(gate: Gate) -> None:
    suite = BASE_SUITE + (
        '\n[[probe]]\nname = "a.0000"\nprobe = "selftest"\ntool = "none"\n'
        '\n[[test]]\nname = "a"\nkind = "command"\ntool = "none"\nargv = ["true"]\n'
    )
    _refused(gate(suite), "a.0000 are also the names of [[test]] processes")


def test_a_ctest_regex_ctest_refuses_is_a_discovery_error(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(tiny NONE)\nenable_testing()\nadd_test(NAME t COMMAND true)\n"
    )
    subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "b")], check=True, capture_output=True)
    entry = TestEntry(name="c", kind="ctest", tool=Tool.MEMCHECK, build_dir=str(tmp_path / "b"))
    assert [t.case for t in discover(entry)] == ["t"]  # the build dir itself is fine
    with pytest.raises(DiscoveryError, match=r"\[\[test\]\] c: .* did not print its JSON test list"):
        discover(entry.model_copy(update={"regex": "("}))


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ('argv = ["true"]\nbinary = "t"\n', "a command entry does not use `binary` (gtest)"),
        ('argv = ["true"]\nexpect_exit = 256\n', "expect_exit"),
        ('argv = ["true"]\nexpect_exit = true\n', "expect_exit"),
        ('argv = ["true"]\nexpect_exit = -11\n', "expect_exit"),
        ('argv = ["true"]\nexpect = "invalid-global-write"\n', "`expect` is read only with control = true"),
        (
            'argv = ["/usr/local/cuda/bin/compute-sanitizer", "--tool", "memcheck", "./app"]\n',
            "argv[0] is /usr/local/cuda/bin/compute-sanitizer: cuprobe runs the program under the sanitizer itself",
        ),
    ],
)
def test_a_test_entry_key_that_would_be_ignored_or_never_match_is_refused(gate: Gate, extra: str, says: str) -> None:
    suite = BASE_SUITE + '\n[[test]]\nname = "a"\nkind = "command"\ntool = "initcheck"\n' + extra
    _refused(gate(suite), says)


def test_a_ctest_entry_given_gtests_filter_is_refused() -> None:
    with pytest.raises(ValueError, match=r"a ctest entry does not use `filter` \(gtest\)"):
        TestEntry(name="c", kind="ctest", tool=Tool.MEMCHECK, build_dir="b", filter="Math.*")


def test_a_baseline_the_suite_names_must_exist(gate: Gate, tmp_path: Path) -> None:
    named = 'name = "gate-test"\n'
    suite = BASE_SUITE.replace(named, named + 'baseline = "known.toml"\n')
    _refused(gate(suite), "(its `baseline` key) does not exist")


def test_a_baseline_of_another_format_version_is_refused(gate: Gate, tmp_path: Path) -> None:
    (tmp_path / "b.toml").write_text("version = 2\n")
    _refused(gate(BASE_SUITE, "--baseline", str(tmp_path / "b.toml")), "version")


def test_workdir_without_local_is_refused(tmp_path: Path) -> None:
    (tmp_path / "suite.toml").write_text(BASE_SUITE)
    result = CliRunner().invoke(app, ["gate", str(tmp_path / "suite.toml"), "--workdir", str(tmp_path / "w")])
    _refused(result, "--workdir keeps the artifacts of runs on this machine: it needs --local")


def test_an_option_cuprobe_sets_itself_is_refused_with_its_reason(gate: Gate) -> None:
    ok = 'params = { behaviour = "ok" }'
    suite = BASE_SUITE.replace(ok, f"{ok}\noptions = {{ xml = true }}")
    _refused(gate(suite), '[[probe]] "selftest-initcheck" options: cuprobe does not pass --xml: cuprobe always asks')
