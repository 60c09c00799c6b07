"""A relative --workdir works like an absolute one for `run`, `gate --local` and `sweep run` outside the repo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app

cli = CliRunner()


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory outside the repository, with its own data dir."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CUPROBE_DATA_DIR", raising=False)
    monkeypatch.delenv("CUPROBE_DATABASE_URL", raising=False)
    return tmp_path


def test_run_with_relative_workdir_is_clean(elsewhere: Path) -> None:
    result = cli.invoke(app, ["run", "selftest", "--workdir", "wd", "--json"])
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["outcome"] == "clean"
    assert (elsewhere / "wd" / "result.json").is_file()


def test_gate_local_with_relative_workdir_passes(elsewhere: Path) -> None:
    (elsewhere / "suite.toml").write_text(
        'name = "rel"\n[[probe]]\nname = "self"\nprobe = "selftest"\ntool = "none"\n'
    )
    result = cli.invoke(app, ["gate", "suite.toml", "--local", "--workdir", "gwd"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert (elsewhere / "gwd" / "self" / "0" / "result.json").is_file()


def test_sweep_run_outside_the_repository(elsewhere: Path) -> None:
    (elsewhere / "sweep.toml").write_text(
        'name = "rel"\n[[entry]]\nprobe = "selftest"\ntool = "none"\n'
        'grid = { behaviour = ["ok", "violate"] }\n'
    )
    result = cli.invoke(app, ["sweep", "run", "sweep.toml"])
    assert "could not run" not in result.stdout.lower(), result.stdout
    assert result.exit_code in (0, 1), result.stdout
    assert "| clean | 1 |" in result.stdout and "| findings | 1 |" in result.stdout
