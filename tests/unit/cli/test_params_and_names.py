"""What a user types wrong, or types the short way: list parameters as a,b; a misspelt probe or parameter answered
with the names that exist; a file `cuprobe parse` cannot read answered with how to save one; `submit --tool`'s
choices."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.jobs import parse_params
from cuprobe.service.cli.main import app
from cuprobe.service.probing.admission import BadRequest, admit

cli = CliRunner()


def _flat(text: str) -> str:
    """The text as one line: rich and click wrap it to the terminal."""
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("given", "read"),
    [
        ("ops=matmul", ["matmul"]),
        ("ops=matmul,index_add", ["matmul", "index_add"]),
        ("ops=[matmul]", ["matmul"]),
        ("ops=[matmul, index_add]", ["matmul", "index_add"]),
        ('ops=["matmul"]', ["matmul"]),  # JSON stays JSON
    ],
)
def test_a_list_parameter_is_written_as_a_comma_list(given: str, read: list[str]) -> None:
    params = parse_params([given], None, "determinism")
    assert params == {"ops": read}
    assert admit("determinism", None, params).model.model_dump()["ops"] == read


def test_text_parameters_and_unknown_probes_are_left_as_given() -> None:
    assert parse_params(["behaviour=ok", "seconds=0.5"], None, "selftest") == {"behaviour": "ok", "seconds": 0.5}
    assert parse_params(["ops=a,b"], None, "no-such-probe") == {"ops": "a,b"}  # the service judges its own probes


def test_run_takes_the_comma_form() -> None:
    done = cli.invoke(
        app, ["run", "determinism", "-p", "ops=matmul,index_add", "-p", "device=cpu", "-p", "processes=2", "--json"]
    )
    assert done.exit_code == 0, done.stdout + done.stderr
    assert '"outcome": "clean"' in done.stdout and "2 case(s) met their expectations" in done.stdout


def test_a_list_given_as_text_says_how_a_list_is_written() -> None:
    with pytest.raises(BadRequest) as refused:  # what the API answers to {"ops": "matmul"}
        admit("determinism", None, {"ops": "matmul"})
    assert 'takes a list, in JSON ["a", "b"] (on cuprobe\'s command line also -p NAME=a,b)' in str(refused.value)


def test_param_help_says_the_json_and_the_comma_forms() -> None:
    for command in ("run", "submit"):
        said = _flat(cli.invoke(app, [command, "--help"], env={"COLUMNS": "80"}).stdout)
        assert "VALUE is read as JSON where it parses (-p n=[1,2,4]" in said
        assert "a list also as a,b (-p variants=guarded,torch)" in said


def test_an_unknown_parameter_names_the_valid_ones() -> None:
    done = cli.invoke(app, ["run", "selftest", "-p", "behavior=x"], env={"COLUMNS": "200"})
    assert done.exit_code == 2
    said = _flat(done.stderr)
    assert "behavior: unknown field; did you mean behaviour? (its fields: behaviour, seconds, cuda_init)" in said


def test_a_misspelt_probe_gets_a_did_you_mean() -> None:
    done = cli.invoke(app, ["run", "selftst"], env={"COLUMNS": "200"})
    assert done.exit_code == 2
    said = _flat(done.stderr)
    assert said.startswith("error: unknown probe 'selftst' (did you mean selftest?); known probes:")
    far = _flat(cli.invoke(app, ["run", "zzzz"], env={"COLUMNS": "200"}).stderr)
    assert "did you mean" not in far and "known probes: bf16-matmul" in far


def test_parse_of_a_file_that_is_no_xml_says_how_to_save_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("<not xml")
    done = cli.invoke(app, ["parse", str(bad)], env={"COLUMNS": "200"})
    assert done.exit_code == 3
    assert "cuprobe parse reads the file compute-sanitizer writes with --xml --save FILE" in _flat(done.stdout)


def test_submit_tool_lists_the_choices() -> None:
    said = _flat(cli.invoke(app, ["submit", "--help"], env={"COLUMNS": "80"}).stdout)
    assert "--tool <none|memcheck|initcheck|racecheck|synccheck>" in said
    wrong = cli.invoke(app, ["submit", "selftest", "--tool", "memchek", "--url", "http://127.0.0.1:9"])
    assert wrong.exit_code == 2 and "memchek" in wrong.stderr and "racecheck" in wrong.stderr
