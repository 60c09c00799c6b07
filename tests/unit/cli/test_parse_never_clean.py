"""`cuprobe parse` with a log never says `clean` for output it could not read, a cap that kept none of the errors
the summary counts, or a program the log says failed: real captures, some of them cut or edited."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from tests.conftest import VERSIONS, capture, xml_of

cli = CliRunner()


def _parse(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    result = cli.invoke(app, ["parse", *args, "--json"], env=env)
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}


def _unreadable(kind: str, real: Path, tmp: Path) -> Path:
    text = real.read_bytes()
    if kind == "empty":
        return _write(tmp / "empty.xml", b"")
    if kind == "cut":
        return _write(tmp / "cut.xml", text[:100])
    if kind == "doctype":
        head = b'<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n'
        return _write(tmp / "doctype.xml", head + text.split(b"?>", 1)[1])
    if kind == "gzip-unnamed":
        return _write(tmp / "run.xml", gzip.compress(b"\x00\x01 not xml"))
    return _write(tmp / "page.xml", b"<html><body>not sanitizer output</body></html>")


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", ["empty", "cut", "doctype", "gzip-unnamed", "html"])
@pytest.mark.parametrize("tool", [None, "memcheck"])
def test_unreadable_xml_with_a_clean_log_is_a_sanitizer_error(
    version: str, kind: str, tool: str | None, tmp_path: Path
) -> None:
    case = capture(version, "memcheck_ok")
    xml = _unreadable(kind, xml_of(capture(version, "memcheck_oob")), tmp_path)
    code, body = _parse(str(xml), "--log", str(case / "stdout.txt"), *(["--tool", tool] if tool else []))
    assert (code, body["outcome"]) == (3, "sanitizer_error"), body
    assert "refused or unreadable" in body["message"]


def test_tool_none_is_refused_for_saved_output() -> None:
    case = capture(VERSIONS[1], "memcheck_ok")
    result = cli.invoke(app, ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt"), "--tool", "none"])
    assert result.exit_code == 2 and "--tool none" in result.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_a_cap_that_kept_none_of_the_counted_errors_is_not_clean(version: str, tmp_path: Path) -> None:
    case = capture(version, "initcheck_uninit")
    # Its summary line alone: the log is under the byte cap too, which refuses a longer one.
    (summary,) = [line for line in (case / "stdout.txt").read_text().splitlines() if "ERROR SUMMARY" in line]
    log = _write(tmp_path / "summary.txt", f"{summary}\n".encode())
    args = (str(xml_of(case)), "--log", str(log), "--tool", "initcheck")
    code, body = _parse(*args)
    assert (code, body["outcome"]) == (1, "findings")  # the positive control: uncapped, the findings are there
    code, body = _parse(*args, env={"CUPROBE_MAX_XML_BYTES": "100"})
    assert (code, body["outcome"], body["truncated"]) == (3, "sanitizer_error", True), body
    assert "kept none of them" in body["message"]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_print_limit_that_hid_every_error_is_not_clean(version: str) -> None:
    """A log whose summary says errors were not printed, beside an XML without them."""
    code, body = _parse(
        str(xml_of(capture(version, "initcheck_ok"))),
        "--log",
        str(capture(version, "initcheck_many_default_limit") / "stdout.txt"),
        "--tool",
        "initcheck",
    )
    assert (code, body["outcome"]) == (3, "sanitizer_error"), body


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", ["memcheck_kill", "memcheck_segv", "memcheck_abort", "memcheck_exit3"])
def test_a_program_the_log_says_failed_is_not_clean(version: str, case: str) -> None:
    found = capture(version, case)
    code, body = _parse(str(xml_of(found)), "--log", str(found / "stdout.txt"), "--tool", "memcheck")
    assert (code, body["outcome"]) == (3, "probe_error"), body
    assert "the log says the program" in body["message"]
    ok = capture(version, "memcheck_ok")  # the same tool's clean run stays clean
    code, body = _parse(str(xml_of(ok)), "--log", str(ok / "stdout.txt"), "--tool", "memcheck")
    assert (code, body["outcome"]) == (0, "clean"), body


@pytest.mark.parametrize("version", VERSIONS)
def test_a_log_of_another_tool_is_refused_not_read_as_a_clean_run(version: str) -> None:
    """racecheck ends with a RACECHECK SUMMARY line and every other tool with an ERROR SUMMARY line: a log whose line
    is the other kind belongs to another run, so its 0 cannot make this one clean (exit 2, naming the log)."""
    race, mem = capture(version, "racecheck_sound"), capture(version, "memcheck_ok")
    for xml, log, tool, says in (
        (race, race, "memcheck", "a RACECHECK SUMMARY line, which only racecheck prints"),
        (mem, mem, "racecheck", "an ERROR SUMMARY line, which racecheck never prints"),
    ):
        result = cli.invoke(app, ["parse", str(xml_of(xml)), "--log", str(log / "stdout.txt"), "--tool", tool])
        assert result.exit_code == 2 and says in " ".join(result.output.split()), result.output
    for found, tool in ((race, "racecheck"), (mem, "memcheck")):  # the positive control: each with its own tool
        code, body = _parse(str(xml_of(found)), "--log", str(found / "stdout.txt"), "--tool", tool)
        assert (code, body["outcome"]) == (0, "clean"), body


def test_a_prefix_no_line_of_the_log_starts_with_is_refused() -> None:
    """A log written with the default prefix, read with another: the summary would still be found, so the run would
    read as clean under a prefix it never had; refused, naming the prefix (the log's own prefix is the control)."""
    ok = capture(VERSIONS[1], "memcheck_ok")
    args = ["parse", str(xml_of(ok)), "--tool", "memcheck", "--log", str(ok / "stdout.txt")]
    wrong = cli.invoke(app, [*args, "--prefix", "@@ "])
    assert wrong.exit_code == 2 and "no line of" in wrong.stderr and "'@@ '" in wrong.stderr
    assert cli.invoke(app, [*args, "--prefix", "========= "]).exit_code == 0


def test_without_a_log_the_finding_count_is_the_one_a_log_gives_with_the_fallout_named() -> None:
    oob = capture(VERSIONS[1], "memcheck_oob")
    _, bare = _parse(str(xml_of(oob)), "--tool", "memcheck")
    _, logged = _parse(str(xml_of(oob)), "--tool", "memcheck", "--log", str(oob / "stdout.txt"))
    real = sum(1 for f in bare["findings"] if not f["fallout"])
    assert real < len(bare["findings"])  # the capture holds fallout: the two counts could differ
    assert bare["message"].startswith(f"{real} finding(s) from {bare['records']} record(s) (")
    assert logged["message"].startswith(f"{real} finding(s) from {logged['records']} record(s)")


FORGED_RACECHECK = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_summary_line_the_program_printed_first_is_not_believed(version: str, tmp_path: Path) -> None:
    """A program can print a summary line of its own: racecheck's log of a run with hazards, behind a first line
    that says 0, beside an XML of 0 records, was read as clean. Disagreeing summaries are never clean."""
    real = capture(version, "sample_block_error_hazard")
    log = _write(tmp_path / "race.txt", (FORGED_RACECHECK + (real / "stdout.txt").read_text()).encode())
    empty = xml_of(capture(version, "racecheck_sound"))
    code, body = _parse(str(empty), "--log", str(log), "--tool", "racecheck")
    assert (code, body["outcome"]) == (3, "sanitizer_error"), body
    assert "summary lines that disagree" in body["message"]
    code, body = _parse(str(empty), "--log", str(capture(version, "racecheck_sound") / "stdout.txt"))
    assert (code, body["outcome"]) == (0, "clean"), body  # the same XML with its own log stays clean


@pytest.mark.parametrize("version", VERSIONS)
def test_a_count_the_program_printed_before_the_sanitizers_zero_is_not_clean(version: str, tmp_path: Path) -> None:
    ok = capture(version, "memcheck_ok")
    forged = "========= ERROR SUMMARY: 5 errors\n" + (ok / "stdout.txt").read_text()
    code, body = _parse(
        str(xml_of(ok)), "--log", str(_write(tmp_path / "log.txt", forged.encode())), "--tool", "memcheck"
    )
    assert (code, body["outcome"]) == (3, "sanitizer_error"), body
    assert "5 errors" in body["message"] and "0 errors" in body["message"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_sanitizers_not_printed_line_is_not_a_second_summary(version: str) -> None:
    """A capped summary (`300 errors`, then `200 errors were not printed`) is one summary: its findings stand."""
    case = capture(version, "initcheck_many_default_limit")
    code, body = _parse(str(xml_of(case)), "--log", str(case / "stdout.txt"), "--tool", "initcheck")
    assert (code, body["outcome"], body["truncated"]) == (1, "findings", True), body


def test_a_gzipped_log_is_read_only_up_to_the_byte_cap(tmp_path: Path) -> None:
    """A small gzip that decompresses past the cap is refused as it streams, never read whole or called clean."""
    ok = capture(VERSIONS[1], "memcheck_ok")
    padding = b"program output\n" * (4 * 1024 * 1024 // 15)
    log = _write(tmp_path / "log.gz", gzip.compress(padding + (ok / "stdout.txt").read_bytes()))
    assert log.stat().st_size < 100_000
    args = (str(xml_of(ok)), "--log", str(log), "--tool", "memcheck")
    result = cli.invoke(app, ["parse", *args], env={"CUPROBE_MAX_XML_BYTES": str(1024 * 1024)})
    assert result.exit_code == 3 and "decompresses to more than 1048576 bytes" in result.stderr, result.stderr
    code, body = _parse(*args)  # under the default cap the same log is read: the positive control
    assert (code, body["outcome"]) == (0, "clean"), body
