"""Bad input said plainly (no pydantic dump, no URL); suites and sweeps share one spelling, the old one warns;
one setting switches the command probe on."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from cuprobe.service.config import Settings
from cuprobe.service.gate.suite import load_suite
from cuprobe.service.models.problems import SpellingDeprecated
from cuprobe.service.sweep.definition import DefinitionError, parse_definition
from cuprobe.service.sweep.plan import plan

cli = CliRunner()


def test_bad_choice_names_the_allowed_values() -> None:
    result = cli.invoke(app, ["run", "selftest", "-p", "behaviour=bogus"], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "behaviour: 'bogus' is not one of ok, sleep, hang, kill, segv, raise" in result.stderr
    assert "pydantic" not in result.output and "https://" not in result.output and "Input should" not in result.output


def test_bad_sweep_field_is_plain(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError) as caught:
        parse_definition('name = "x"\n[[entry]]\nprobe = "selftest"\ntool = "bogus"\n', "x.toml")
    said = str(caught.value)
    assert "'bogus' is not one of none, memcheck" in said and "https://" not in said


def test_bad_suite_field_is_plain(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n[[probe]]\nname = "a"\nprobe = "selftest"\ntool = "bogus"\n')
    result = cli.invoke(app, ["gate", str(path), "--local"], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "'bogus' is not one of none, memcheck" in result.stderr
    assert "https://" not in result.stderr


NIGHTLY_OLD = """name = "old"
[[entry]]
probe = "narrow-matmul"
tools = ["initcheck"]
params = { m = 32, k = 32, tile = 32 }
grid = { n = [1, 2, 64], variant = ["unguarded", "guarded"] }
"""


def test_sweep_old_spellings_still_work_and_warn() -> None:
    new = NIGHTLY_OLD.replace("tools = [", "tool = [").replace("variant =", "variants =")
    with pytest.warns(SpellingDeprecated) as warned:
        old = parse_definition(NIGHTLY_OLD)
    assert {str(w.message).split("`")[1] for w in warned} == {"tools", "variant"}
    keys = [c.key for p in plan(old) for c in p.cases]
    assert keys == [c.key for p in plan(parse_definition(new)) for c in p.cases]
    assert "narrow-matmul/initcheck/guarded-n64" in keys


def test_sweep_cli_prints_the_deprecation_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUPROBE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CUPROBE_DATABASE_URL", raising=False)
    (tmp_path / "d.toml").write_text('name = "d"\n[[entry]]\nprobe = "selftest"\ntools = ["none"]\n')
    result = cli.invoke(app, ["sweep", "run", str(tmp_path / "d.toml")], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.stdout
    assert result.stderr.count("`tools` is deprecated; write `tool`") == 1


def test_suite_accepts_the_sweep_spelling_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n[[probe]]\nname = "a"\nprobe = "selftest"\ntools = ["none"]\n')
    with pytest.warns(SpellingDeprecated, match="`tools` is deprecated"):
        suite = load_suite(path)
    assert suite.entries[0].tool.value == "none"


def test_one_setting_enables_the_command_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUPROBE_COMMAND_ENABLED", "1")
    assert Settings().command_enabled
    monkeypatch.delenv("CUPROBE_COMMAND_ENABLED")
    monkeypatch.setenv("CUPROBE_COMMAND_PROBE_ENABLED", "1")
    with pytest.warns(FutureWarning, match="use|set CUPROBE_COMMAND_ENABLED"):
        assert Settings().command_enabled


def test_the_old_setting_name_reaches_the_probe_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe reads CUPROBE_COMMAND_ENABLED itself (it runs on GPU workers only): the runner hands it the switch."""
    from cuprobe.service.models import Tool
    from cuprobe.service.probing.secrets import probe_environment

    monkeypatch.delenv("CUPROBE_COMMAND_ENABLED", raising=False)
    monkeypatch.setenv("CUPROBE_COMMAND_PROBE_ENABLED", "true")
    with pytest.warns(FutureWarning):
        settings = Settings()
    assert probe_environment(Tool.NONE, settings)["CUPROBE_COMMAND_ENABLED"] == "1"
