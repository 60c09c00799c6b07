"""`cuprobe parse` names the tool from --tool, the records or racecheck's summary, and never guesses one."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from tests.conftest import VERSIONS, capture, xml_of

cli = CliRunner()


@pytest.mark.parametrize("version", VERSIONS)
def test_synccheck_records_name_their_tool(version: str) -> None:
    case = capture(version, "synccheck_syncwarp")
    result = cli.invoke(app, ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt"), "--json"])
    body = json.loads(result.stdout)
    assert result.exit_code == 1 and body["tool"] == "synccheck" and body["outcome"] == "findings"


@pytest.mark.parametrize("version", VERSIONS)
def test_run_without_records_and_without_tool_is_not_called_clean(version: str) -> None:
    case = capture(version, "synccheck_ok")
    result = cli.invoke(app, ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt")])
    assert result.exit_code == 2
    assert "tool unknown: pass --tool" in result.stderr and "memcheck" not in result.output
    named = cli.invoke(
        app, ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt"), "--tool", "synccheck", "--json"]
    )
    body = json.loads(named.stdout)
    assert named.exit_code == 0 and (body["tool"], body["outcome"]) == ("synccheck", "clean")


@pytest.mark.parametrize("version", VERSIONS)
def test_racecheck_summary_names_racecheck(version: str) -> None:
    case = capture(version, "racecheck_sound")
    result = cli.invoke(app, ["parse", str(xml_of(case)), "--log", str(case / "stdout.txt"), "--json"])
    body = json.loads(result.stdout)
    assert result.exit_code == 0 and (body["tool"], body["outcome"]) == ("racecheck", "clean")


def test_text_log_given_as_the_xml_says_what_to_pass() -> None:
    case = capture(VERSIONS[1], "memcheck_oob")
    result = cli.invoke(app, ["parse", str(case / "stdout.txt")], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "text output" in result.stderr and "--log" in result.stderr and "--xml --save" in result.stderr
    assert "lxml" not in result.output and "Traceback" not in result.output
