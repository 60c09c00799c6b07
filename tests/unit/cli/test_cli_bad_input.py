"""One-machine commands given input they cannot use: exit 2 naming the problem, never a traceback's exit 1 (which
reads as findings); saved output read as the user saved it (a gzipped log, warnings that fail with --fail-on)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cuprobe.probes.gpu import cuda_device_count
from cuprobe.service.cli.main import app
from tests.conftest import VERSIONS, capture, xml_of

cli = CliRunner()
NEW = VERSIONS[1]


def _usage_error(args: list[str], says: str, env: dict[str, str] | None = None) -> None:
    result = cli.invoke(app, args, env={"COLUMNS": "250", **(env or {})})
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output


def test_a_gzipped_log_is_read() -> None:
    case = capture(NEW, "racecheck_race_hazard")
    result = cli.invoke(app, ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt.gz"), "--json"])
    body = json.loads(result.stdout)
    assert (result.exit_code, body["outcome"], body["tool"]) == (1, "findings", "racecheck"), body["message"]
    assert body["summary_count"] is not None


def test_a_tool_that_disagrees_with_the_records_is_refused() -> None:
    case = capture(NEW, "memcheck_oob")
    args = ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt")]
    _usage_error([*args, "--tool", "initcheck"], "--tool initcheck, but the file's records name memcheck")
    agrees = cli.invoke(app, [*args, "--tool", "memcheck", "--json"])
    assert (agrees.exit_code, json.loads(agrees.stdout)["outcome"]) == (1, "findings")


def test_warnings_fail_a_parse_with_fail_on_warning() -> None:
    case = capture(NEW, "sample_warp_error_hazard")
    args = ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt"), "--json"]
    default = cli.invoke(app, args)
    assert json.loads(default.stdout)["outcome"] == "findings" and default.exit_code == 0  # warnings only
    assert cli.invoke(app, [*args, "--fail-on", "warning"]).exit_code == 1


def test_a_workdir_that_cannot_be_a_folder_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    _usage_error(["run", "selftest", "--workdir", str(plain)], f"--workdir {plain}")
    _usage_error(["exec", "--workdir", str(plain / "below"), "--", "true"], "--workdir")


def test_a_bad_setting_names_its_variable() -> None:
    case = capture(NEW, "memcheck_ok")
    bad = {"CUPROBE_MAX_RECORDS": "abc"}
    _usage_error(["parse", str(xml_of(case))], "CUPROBE_MAX_RECORDS='abc'", bad)
    _usage_error(["doctor"], "CUPROBE_MAX_RECORDS='abc'", bad)
    _usage_error(["run", "selftest"], "CUPROBE_TIMEOUT_S", {"CUPROBE_TIMEOUT_S": "-1"})


def test_selftest_asked_to_initialise_cuda_is_never_clean_without_it(tmp_path: Path) -> None:
    """`-p cuda_init=true` promises a CUDA program: where the driver has no device it is `unavailable` (exit 3)."""
    done = cli.invoke(app, ["run", "selftest", "-p", "cuda_init=true", "--json", "--workdir", str(tmp_path)])
    said = json.loads(done.stdout)
    if cuda_device_count():  # a GPU machine: CUDA really initialised
        assert said["outcome"] == "clean" and done.exit_code == 0, done.stdout
    else:
        assert said["outcome"] == "unavailable" and done.exit_code == 3, done.stdout
        assert "CUDA was not initialised" in said["message"]


def test_a_log_written_with_prefix_is_read_with_the_same_prefix(tmp_path: Path) -> None:
    """A log from `--prefix cs:` (here the real memcheck_oob capture's log with its default prefix swapped for
    `cs:`, as the option writes it) is read with `--prefix cs:`; without it, exit 2 says which prefix to pass."""
    case = capture(NEW, "memcheck_oob")
    original = (case / "stdout.txt").read_text()
    log = tmp_path / "prefixed.txt"
    log.write_text(
        "".join(
            ("cs:" + line[10:]) if line.startswith("========= ") else line
            for line in original.splitlines(keepends=True)
        )
    )
    assert "=========" not in log.read_text()
    args = ["parse", str(xml_of(case)), "--json"]
    want = json.loads(cli.invoke(app, [*args, "--log", str(case / "stdout.txt")]).stdout)
    read = cli.invoke(app, [*args, "--log", str(log), "--prefix", "cs:"])
    assert read.exit_code == 1 and json.loads(read.stdout) == want and want["summary_count"] == 4
    _usage_error([*args, "--log", str(log)], "pass the --prefix the sanitizer ran with (--prefix 'cs:')")
    _usage_error([*args, "--prefix", "cs:"], "--prefix needs --log")


def test_a_kernel_filter_on_a_bare_run_is_refused_not_ignored() -> None:
    _usage_error(["run", "selftest", "--tool", "none", "--kernel", "gemm"], "a bare run (tool none) would ignore it")
