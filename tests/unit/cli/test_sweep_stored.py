"""`cuprobe sweep run` says where it stored the sweep and who sees it there."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app

cli = CliRunner()


def test_sweep_run_says_where_the_sweep_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUPROBE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CUPROBE_DATABASE_URL", raising=False)
    (tmp_path / "d.toml").write_text('name = "d"\n[[entry]]\nprobe = "selftest"\ntool = "none"\n')
    done = cli.invoke(app, ["sweep", "run", str(tmp_path / "d.toml")], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert f"stored in {tmp_path / 'data' / 'cuprobe.db'} (CUPROBE_DATA_DIR={tmp_path / 'data'})" in said
    assert "a `cuprobe up` started with the same CUPROBE_DATA_DIR" in said
    shown = said.split("`cuprobe sweep show ")[1].split("`")[0]
    assert f"# Sweep d ({shown})" in done.stdout  # the id the summary names
    again = cli.invoke(app, ["sweep", "show", shown], env={"COLUMNS": "80"})
    assert again.exit_code == 0 and f"# Sweep d ({shown})" in again.stdout
    assert "stored in" not in done.stdout  # stdout holds the summary alone
