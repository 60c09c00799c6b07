"""`cuprobe --version` and `cuprobe probes NAME`: the version, and a probe's parameters with types, defaults
and allowed values."""

from __future__ import annotations

from typer.testing import CliRunner

from cuprobe import __version__
from cuprobe.service.cli.main import app

cli = CliRunner()


def test_version() -> None:
    result = cli.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"cuprobe {__version__}"


def test_probe_parameters_with_types_defaults_and_allowed_values() -> None:
    result = cli.invoke(app, ["probes", "selftest"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    behaviour = next(line for line in lines if line.startswith("behaviour "))
    assert "choice" in behaviour and '"ok"' in behaviour and "ok, sleep, hang, kill" in behaviour
    seconds = next(line for line in lines if line.startswith("seconds "))
    assert "float" in seconds and "0.0" in seconds and ">= 0, <= 3600" in seconds


def test_unknown_probe_is_a_usage_error() -> None:
    result = cli.invoke(app, ["probes", "no-such-probe"])
    assert result.exit_code == 2 and "no-such-probe" in result.stderr
