"""The CLI as a user meets it: output, JSON fields and exit codes (0 clean, 1 findings, 2 usage, 3 not run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from tests.check_rows import expected_exit
from tests.conftest import BOX_ROOT, VERSIONS, capture, xml_of

cli = CliRunner()


def test_run_gpu_probe_on_this_cpu_machine_is_unavailable_exit_3() -> None:
    result = cli.invoke(app, ["run", "uninit-read", "--tool", "initcheck", "--json"])
    assert result.exit_code == 3
    body = json.loads(result.stdout)
    assert body["outcome"] == "unavailable" and "no CUDA device" in body["message"]
    assert body["schema_version"] == 1 and body["environment"]["cuprobe"]


def test_run_cpu_probe_clean_and_findings() -> None:
    assert cli.invoke(app, ["run", "selftest"]).exit_code == 0
    violated = cli.invoke(app, ["run", "selftest", "-p", "behaviour=violate", "--json"])
    assert violated.exit_code == 1 and json.loads(violated.stdout)["outcome"] == "findings"


def test_bad_parameter_is_usage_error_naming_it() -> None:
    result = cli.invoke(app, ["run", "uninit-read", "-p", "k=5000"])
    assert result.exit_code == 2 and "k must be <= n" in result.stderr and not result.stdout  # errors: stderr
    unknown = cli.invoke(app, ["run", "uninit-read", "-p", "bogus=1"])
    assert unknown.exit_code == 2 and "bogus" in unknown.stderr
    assert cli.invoke(app, ["run", "no-such-probe"]).exit_code == 2
    assert cli.invoke(app, ["run", "selftest", "--tool", "bogus"]).exit_code == 2


def test_parse_saved_output_with_log() -> None:
    case = capture(VERSIONS[1], "initcheck_uninit")
    result = cli.invoke(
        app,
        ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt"), "--source-root", BOX_ROOT, "--json"],
    )
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["outcome"] == "findings" and body["records"] == 24 and body["summary_count"] == 24
    (finding,) = body["findings"]
    for key in ("signature", "tool", "kind", "kernel", "file", "line", "count", "hazards"):
        assert key in finding
    assert (finding["file"], finding["line"], finding["count"]) == ("kernels/uninit_read.cu", 6, 24)


def test_parse_print_limited_output_is_flagged_truncated() -> None:
    case = capture(VERSIONS[0], "initcheck_many_default_limit")
    result = cli.invoke(app, ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt"), "--json"])
    body = json.loads(result.stdout)
    assert body["truncated"] and body["records"] == 100 and body["summary_count"] == 300


def test_parse_clean_needs_the_summary() -> None:
    case = capture(VERSIONS[0], "initcheck_ok")
    without = cli.invoke(app, ["parse", str(xml_of(case)), "--tool", "initcheck", "--json"])
    assert without.exit_code == 3 and "cannot say the run was clean" in json.loads(without.stdout)["message"]
    with_log = cli.invoke(
        app, ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt"), "--tool", "initcheck", "--json"]
    )
    assert with_log.exit_code == 0 and json.loads(with_log.stdout)["outcome"] == "clean"


def test_parse_summary_counting_errors_with_an_empty_xml_is_never_clean() -> None:
    """A real log whose summary counts 24 errors, beside a real XML with no records: records were lost."""
    log = capture(VERSIONS[1], "initcheck_uninit") / "stdout.txt"
    empty_xml = xml_of(capture(VERSIONS[1], "initcheck_ok"))
    result = cli.invoke(app, ["parse", str(empty_xml), "--log", str(log), "--tool", "initcheck", "--json"])
    body = json.loads(result.stdout)
    assert result.exit_code == 3, body
    assert body["outcome"] == "sanitizer_error" and body["summary_count"] == 24 and body["records"] == 0
    assert "counts 24 errors but the XML held 0" in body["message"]


def test_parse_racecheck_human_table_shows_hazards() -> None:
    case = capture(VERSIONS[0], "racecheck_race_analysis")
    result = cli.invoke(
        app, ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt")], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 1 and "shared-memory-race" in result.stdout and "4208" in result.stdout


def test_probes_lists_the_catalog() -> None:
    result = cli.invoke(app, ["probes"])
    assert result.exit_code == 0
    for name in ("uninit-read", "planted", "selftest"):
        assert name in result.stdout


def test_doctor_says_what_is_missing_here() -> None:
    result = cli.invoke(app, ["doctor"])
    assert result.exit_code == 3
    assert "compute-sanitizer" in result.stdout and "GPU" in result.stdout


def test_console_script_entry_point(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cuprobe.service.cli", "run", "selftest", "--json", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "clean" and (tmp_path / "result.json").exists()


def test_local_check_runs_cpu_probes_and_names_the_gpu_ones_it_could_not_run() -> None:
    result = cli.invoke(app, ["check", "--local"], env={"COLUMNS": "250"})
    assert result.exit_code == expected_exit(result.stdout), result.stdout
    assert "could not run here (unavailable): uninit-read, planted" in result.stdout
    assert "selftest" in result.stdout and "clean" in result.stdout
    strict = cli.invoke(app, ["check", "--local", "--strict"], env={"COLUMNS": "250"})
    assert strict.exit_code == 3
