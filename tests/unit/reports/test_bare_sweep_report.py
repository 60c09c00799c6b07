"""A sweep of bare runs on a machine without a GPU, reported as a user reads it: no `None`, no raw booleans, no
"changes since nothing", no batching note on bare processes; `sweep diff` in words, `sweep show` with a header."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from cuprobe.service.cli.main import app

DEFINITION = 'name = "bare"\n[[entry]]\nprobe = "selftest"\ntool = "none"\ngrid = { behaviour = ["ok", "violate"] }\n'


def _cli(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"CUPROBE_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "250"})


def test_a_bare_sweeps_reports_say_what_ran_in_words(tmp_path: Path) -> None:
    (tmp_path / "def.toml").write_text(DEFINITION)
    first = _cli(tmp_path, "sweep", "run", str(tmp_path / "def.toml"), "--report", str(tmp_path / "out"))
    assert first.exit_code == 1, first.output  # the violation is a new finding
    summary, page = (tmp_path / "out" / "summary.md").read_text(), (tmp_path / "out" / "report.html").read_text()
    for text in (summary, page):
        assert "no sanitizer (bare runs); no GPU driver" in text
        assert "None" not in text and "nothing (first sweep)" not in text
        assert "The first sweep of this definition: nothing earlier to compare with" in text
        assert "allocation map" not in text  # bare processes attribute nothing: no note on why they run alone
    assert "By confirmation" not in summary  # nothing a bare run finds is confirmed: no row of zeros
    assert "<td>False</td>" not in page and "<td>True</td>" not in page
    second = _cli(tmp_path, "sweep", "run", str(tmp_path / "def.toml"))
    assert second.exit_code == 0, second.output
    listed = _cli(tmp_path, "sweep", "show")
    assert listed.output.splitlines()[0].split() == ["id", "definition", "state", "started", "(UTC)"]
    latest, previous = (line.split()[0] for line in listed.output.splitlines()[1:3])
    diffed = _cli(tmp_path, "sweep", "diff", latest)
    assert diffed.exit_code == 0 and diffed.output.startswith(f"## Changes since {previous[:12]}"), diffed.output
    assert "- persisting: 1" in diffed.output and "{" not in diffed.output
    assert json.loads(_cli(tmp_path, "sweep", "diff", latest, "--json").output)["sweep"] == latest
