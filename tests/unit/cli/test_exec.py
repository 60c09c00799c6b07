"""`cuprobe exec`: one command under the sanitizer here, with options, refused options, and its exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from cuprobe.service.probing import runner
from cuprobe.service.probing.environment import GpuFacts
from cuprobe.service.sanitizer.locate import _version
from cuprobe.service.sanitizer.options import installed_options
from tests.conftest import REPLAY, VERSIONS, capture

cli = CliRunner()


@pytest.fixture
def replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The H200 captures answer for compute-sanitizer; the command itself runs for real as its child."""
    monkeypatch.setattr(runner, "gpu_facts", lambda: GpuFacts("NVIDIA H200", "580.159.04", "13.0", "GPU-0"))
    monkeypatch.setenv("CUPROBE_SANITIZER_PATH", str(REPLAY))
    monkeypatch.setenv("CUPROBE_REPLAY_TARGET", "1")
    _version.cache_clear()
    installed_options.cache_clear()


@pytest.mark.parametrize("version", VERSIONS)
def test_exec_leak_check_reaches_the_command_line_and_the_signature(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(version, "memcheck_leak_api")))
    result = cli.invoke(
        app, ["exec", "-t", "memcheck", "-S", "leak-check=full", "--cwd", str(tmp_path), "--json", "--", "true"]
    )
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["outcome"] == "findings" and data["options"]["leak_check"] == "full"
    assert data["command"][data["command"].index("--leak-check") + 1] == "full"
    leak = next(f for f in data["findings"] if f["kind"] == "leak")
    assert leak["signature"] == "memcheck|leak|size=4096|generic|@main|opts:leak-check=full"
    assert leak["case"] == "true" and leak["severity"] == "error"


@pytest.mark.parametrize("version", VERSIONS)
def test_exec_refuses_an_option_of_another_tool_before_running(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    marker = tmp_path / "ran"
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(version, "racecheck_sound")))
    result = cli.invoke(app, ["exec", "-t", "racecheck", "-S", "padding=8", "--", "touch", str(marker)])
    assert result.exit_code == 2 and "--padding is a memcheck option" in result.output
    assert not marker.exists()


def test_exec_unknown_option_name_is_a_usage_error() -> None:
    result = cli.invoke(app, ["exec", "-S", "leak-checks=full", "--", "true"])
    assert result.exit_code == 2 and "knows no sanitizer option 'leak-checks'" in result.output


@pytest.mark.parametrize(
    ("option", "says"),
    [("print-limit=5", "no record is left out"), ("require-cuda-init=no", "never called clean"), ("xml", "XML")],
)
def test_exec_names_why_an_option_cuprobe_sets_itself_is_refused(option: str, says: str) -> None:
    result = cli.invoke(app, ["exec", "-S", option, "--", "true"], env={"COLUMNS": "300"})
    name = option.split("=")[0]
    assert result.exit_code == 2 and f"cuprobe does not pass --{name}:" in result.output and says in result.output


def test_exec_without_a_gpu_is_unavailable() -> None:
    result = cli.invoke(app, ["exec", "-t", "memcheck", "--json", "--", "true"])
    assert result.exit_code == 3 and json.loads(result.output)["outcome"] == "unavailable"


@pytest.mark.parametrize("version", VERSIONS)
def test_warp_error_sample_is_warnings_only_exit_0_unless_fail_on_warning(
    version: str, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    # NVIDIA's warp_error sample under --racecheck-report hazard, as the H200 ran it: 0 errors, 248 warnings.
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(version, "sample_warp_error_hazard")))
    args = ["exec", "-t", "racecheck", "-S", "racecheck-report=hazard", "--json", "--", "true"]
    result = cli.invoke(app, args)
    data = json.loads(result.output)
    assert data["outcome"] == "findings" and result.exit_code == 0
    assert sum(f["count"] for f in data["findings"] if f["severity"] == "warning") == 248
    assert not [f for f in data["findings"] if f["severity"] == "error"]
    assert cli.invoke(app, [*args[:-2], "--fail-on", "warning", "--", "true"]).exit_code == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_suppressions_file_is_passed_as_a_local_path(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    # The sample's own suppressions run (its file is the XML of the unsuppressed run): 0 errors left.
    supp = tmp_path / "supp.xml"
    supp.write_bytes((capture(version, "sample_suppressions_memcheck") / "run.xml").read_bytes())
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(version, "sample_suppressions_memcheck_supp")))
    result = cli.invoke(app, ["exec", "-t", "memcheck", "-S", f"suppressions={supp}", "--json", "--", "true"])
    data = json.loads(result.output)
    assert result.exit_code == 0 and data["outcome"] == "clean"
    assert f"--suppressions={supp.resolve()}" in data["command"]
    missing = cli.invoke(app, ["exec", "-t", "memcheck", "-S", f"suppressions={tmp_path}/nope.xml", "--", "true"])
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_exec_reads_the_sanitizers_short_spellings_and_underscores(tmp_path: Path) -> None:
    refused = cli.invoke(app, ["exec", "-S", "print_limit=5", "--", "true"], env={"COLUMNS": "300"})
    assert refused.exit_code == 2 and "cuprobe does not pass --print-limit:" in refused.output
    quiet = cli.invoke(app, ["exec", "-S", "q", "--", "true"], env={"COLUMNS": "300"})
    assert quiet.exit_code == 2 and "cuprobe does not pass --quiet:" in quiet.output


@pytest.mark.parametrize("version", VERSIONS)
def test_exec_short_launch_count_reaches_the_command_line(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(version, "memcheck_ok")))
    result = cli.invoke(app, ["exec", "-t", "memcheck", "-S", "c=3", "--cwd", str(tmp_path), "--json", "--", "true"])
    data = json.loads(result.output)
    assert data["options"]["launch_count"] == 3 and data["command"][data["command"].index("--launch-count") + 1] == "3"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_clean_run_that_checked_only_the_launches_a_filter_selects_says_so(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    """compute-sanitizer says nothing when a launch skip or count selects no launch, so such a run reads 0 errors: the
    clean result says which options chose the launches and that it cannot tell; one without does not."""
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(version, "memcheck_ok")))
    args = ["exec", "-t", "memcheck", "--cwd", str(tmp_path), "--json"]
    filtered = cli.invoke(app, [*args, "-S", "s=2", "-S", "c=4", "--", "true"])
    data = json.loads(filtered.stdout)
    assert filtered.exit_code == 0 and data["outcome"] == "clean"
    assert data["message"].endswith(
        "only the launches that --launch-skip 2, --launch-count 4 select were checked: "
        "compute-sanitizer does not say whether any launch was, so a filter that selects none reads clean too"
    )  # kernel filters: tests/unit/sanitizer/test_launch_dump.py
    plain = json.loads(cli.invoke(app, [*args, "-S", "c=0", "--", "true"]).stdout)  # 0: every launch
    assert plain["outcome"] == "clean" and "only the launches" not in plain["message"]
    shown = cli.invoke(app, [*args[:-1], "-S", "c=5", "--", "true"], env={"COLUMNS": "300"})
    assert shown.exit_code == 0 and "only the launches that --launch-count 5 selects were checked" in shown.stdout


@pytest.mark.parametrize("accepting", [[], ["--any-exit"]], ids=["expect-0", "any-exit"])
def test_a_command_killed_by_a_signal_crashed_whatever_exit_it_accepts(
    accepting: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    """A signal is not an exit status: a program killed by one crashed (exit 3), even where any exit is accepted and
    the sanitizer's summary counts no error; the same program exiting 0 is the positive control."""
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(VERSIONS[1], "memcheck_ok")))
    args = ["exec", "-t", "memcheck", "--cwd", str(tmp_path), "--json", *accepting, "--"]
    fine = cli.invoke(app, [*args, "sh", "-c", "exit 0"])
    assert fine.exit_code == 0 and json.loads(fine.stdout)["outcome"] == "clean"
    for sig, name in ((9, "SIGKILL"), (11, "SIGSEGV")):
        killed = cli.invoke(app, [*args, "sh", "-c", f"kill -{sig} $$"])
        data = json.loads(killed.stdout)
        assert killed.exit_code == 3 and data["outcome"] == "crashed", data["message"]
        assert f"was killed by {name} ({sig})" in data["message"] and data["signal"] == sig


def test_exec_refuses_an_exit_status_no_program_can_have_a_contradiction_and_a_missing_cwd(tmp_path: Path) -> None:
    for args, says in (
        (["--expect-exit", "256"], "Invalid value for '--expect-exit': Input should be less than or equal to 255"),
        (["--expect-exit", "-9"], "greater than or equal to 0"),
        (["--expect-exit", "1", "--any-exit"], "--expect-exit 1 and --any-exit: give one"),
        (["--cwd", str(tmp_path / "nope")], "nope is missing"),
        (["--cwd", str(tmp_path / "file")], "file is not a directory"),
        (["--", ""], "the command is empty"),
    ):
        (tmp_path / "file").write_text("x")
        command = [] if "--" in args else ["--", "true"]
        result = cli.invoke(app, ["exec", *args, *command], env={"COLUMNS": "300"})
        assert result.exit_code == 2 and says in result.output, (args, result.output)


def test_an_nvtx_include_filter_is_refused_where_the_confirmation_needs_its_control(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """initcheck's confirmation launches control kernels outside the user's NVTX ranges: an include filter would
    leave them unchecked and every run could-not-run, so it is refused up front, and allowed with it off."""
    args = ["run", "uninit-read", "-t", "initcheck", "-S", "nvtx-include=forward", "--json"]
    refused = cli.invoke(app, args, env={"COLUMNS": "300"})
    assert refused.exit_code == 2 and "nvtx_include would leave the confirmation's control kernels" in refused.output
    monkeypatch.setenv("CUPROBE_CONFIRM", "0")
    allowed = cli.invoke(app, args)
    assert allowed.exit_code == 3 and json.loads(allowed.stdout)["outcome"] == "unavailable"  # no GPU here


@pytest.mark.parametrize("version", VERSIONS)
def test_exec_reads_a_compute_sanitizer_line_as_its_tool_options_and_program(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replayed: None
) -> None:
    """The line a user already runs: read into -t, -S and the program, never run as a sanitizer inside one."""
    monkeypatch.setenv("CUPROBE_REPLAY_CASE", str(capture(version, "memcheck_leak_api")))
    line = [
        "/usr/local/cuda/bin/compute-sanitizer", "--tool", "memcheck", "--leak-check", "full", "--xml", "--save",
        "mine.xml", "--print-limit", "10", "true", "--not-an-option-of-the-sanitizer",
    ]
    result = cli.invoke(app, ["exec", "--cwd", str(tmp_path), "--json", "--", *line])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["tool"] == "memcheck" and data["options"]["leak_check"] == "full"
    assert data["params"]["argv"] == ["true", "--not-an-option-of-the-sanitizer"]
    command = data["command"]
    assert sum(part.endswith("compute-sanitizer") for part in command) == 1  # not a sanitizer inside a sanitizer
    assert command[command.index("--leak-check") + 1] == "full" and "mine.xml" not in command
    assert any(f["kind"] == "leak" for f in data["findings"])
    said = result.stderr
    assert "read as: cuprobe exec -t memcheck -S leak-check=full -- true --not-an-option-of-the-sanitizer" in said
    assert "set aside, since cuprobe writes and reads its own report: --xml; --save mine.xml; --print-limit 10" in said


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["compute-sanitizer", "--leak-check"], "--leak-check needs a value, and the command line ends there"),
        (["compute-sanitizer", "--tool", "memcheck"], "names no program to run"),
        (["compute-sanitizer", "--tool", "memchek", "./app"], "--tool memchek is not a sanitizer tool"),
        (["compute-sanitizer", "--tool", "none", "./app"], "--tool none runs no sanitizer"),
        (["compute-sanitizer", "--kill", "./app"], "cuprobe does not pass --kill"),
        (["compute-sanitizer", "--print-level", "error", "./app"], "cuprobe does not pass --print-level"),
        (["compute-sanitizer", "--tool", "racecheck", "--padding", "8", "./app"], "--padding is a memcheck option"),
    ],
)
def test_exec_refuses_a_compute_sanitizer_line_it_cannot_run_as_written(
    args: list[str], says: str, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    line = [part for arg in args for part in (["touch", str(marker)] if arg == "./app" else [arg])]
    result = cli.invoke(app, ["exec", "--", *line], env={"COLUMNS": "250"})
    assert result.exit_code == 2, result.output
    assert says in result.output, result.output
    assert not marker.exists()


def test_exec_refuses_a_tool_that_the_line_contradicts() -> None:
    argv = ["exec", "-t", "racecheck", "--", "compute-sanitizer", "--tool", "memcheck", "./app"]
    result = cli.invoke(app, argv, env={"COLUMNS": "250"})
    assert result.exit_code == 2 and "-t racecheck, but the command line says --tool memcheck" in result.output


def test_a_line_that_cannot_run_here_keeps_what_it_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUPROBE_SANITIZER_PATH", "/nonexistent/compute-sanitizer")
    _version.cache_clear()
    line = ["compute-sanitizer", "--tool", "memcheck", "--leak-check", "full", "--padding", "64", "true"]
    result = cli.invoke(app, ["exec", "--json", "--", *line])
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["outcome"] == "unavailable" and data["params"]["argv"] == ["true"]
    assert data["options"]["leak_check"] == "full" and data["options"]["padding"] == 64
