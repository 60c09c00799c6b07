"""Runs that could not run: one reason said once with its count (gate, sweep, check), the sweep summary lists
every reason or says how many more, and the progress bar never lands in a redirected summary."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cuprobe.service.cli.main import app
from cuprobe.service.models import Outcome, Tool
from cuprobe.service.models.sweep import Sweep, SweepCase
from cuprobe.service.reports.markdown import markdown
from cuprobe.service.reports.table import cell
from tests.check_rows import expected_exit

cli = CliRunner()
NO_GPU = "no CUDA device on this machine"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUPROBE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CUPROBE_DATABASE_URL", raising=False)
    return tmp_path


def test_sweep_of_sixty_gpu_cases_says_no_gpu_once_with_the_count(here: Path) -> None:
    ns = ", ".join(str(n) for n in range(1001, 1061))
    definition = f'name = "gpu"\n[[entry]]\nprobe = "uninit-read"\ntool = "initcheck"\ngrid = {{ n = [{ns}] }}\n'
    (here / "gpu.toml").write_text(definition)
    result = cli.invoke(app, ["sweep", "run", "gpu.toml"])
    assert result.exit_code == 3
    assert result.stdout.startswith("# Sweep gpu"), result.stdout[:300]  # no progress bar in the summary
    said = result.stdout.count(NO_GPU) + result.stderr.count(NO_GPU)
    assert said == 1, result.stdout
    assert "(60 case(s): `uninit-read/initcheck/n=1001`" in result.stdout and "and 52 more)" in result.stdout


def test_gate_says_the_shared_reason_once(here: Path) -> None:
    entries = "".join(
        f'[[probe]]\nname = "gpu{i}"\nprobe = "uninit-read"\ntool = "initcheck"\ncontrol = true\n' for i in range(5)
    )
    cpu = '[[probe]]\nname = "cpu"\nprobe = "selftest"\ntool = "none"\n'
    (here / "suite.toml").write_text(f'name = "g"\n{entries}{cpu}')
    result = cli.invoke(app, ["gate", "suite.toml", "--local", "--summary", "summary.md"], env={"COLUMNS": "200"})
    assert result.exit_code == 3
    # Once as the runs end (each later run names the one that said it), once in the summary.
    assert result.stderr.count(NO_GPU) == 1 and result.stdout.count(NO_GPU) == 1, result.stdout + result.stderr
    for i in range(1, 5):
        assert f"gpu{i} [uninit-read initcheck] 1/1: unavailable the same reason as gpu0 [uninit-read" in result.stderr
    assert "(why: in the summary)" not in result.stderr
    assert "could not run (5 run(s): gpu0, gpu1, gpu2, gpu3, gpu4)" in result.stdout
    summary = (here / "summary.md").read_text()
    assert "**Nothing ran:** all 5 runs could not run, so nothing was checked." not in summary  # the CPU one ran
    assert "None." in summary


def test_a_gate_where_nothing_ran_says_so_once(here: Path) -> None:
    entries = "".join(
        f'[[probe]]\nname = "gpu{i}"\nprobe = "uninit-read"\ntool = "initcheck"\ncontrol = true\n' for i in range(3)
    )
    (here / "suite.toml").write_text(f'name = "g"\n{entries}')
    result = cli.invoke(app, ["gate", "suite.toml", "--local", "--summary", "summary.md"], env={"COLUMNS": "200"})
    assert result.exit_code == 3
    summary = (here / "summary.md").read_text()
    assert "**Nothing ran:** all 3 runs could not run, so nothing was checked." in summary
    assert "None." not in summary and "### New findings" not in summary and "### Could not run (3)" in summary
    assert not re.search(r"\w\.\.\. \|$", summary, re.MULTILINE), summary  # a long reason is cut after a word


def test_a_long_cell_is_cut_after_a_whole_word() -> None:
    reason = "install the pinned PyPI sanitizer (pip install 'cuprobe[gpu]'), or the CUDA toolkit; " * 5
    shown = cell(reason)
    assert len(shown) <= 300 and shown.endswith(" ...")
    assert reason.startswith(shown.removesuffix(" ...")) and reason[len(shown) - 4] == " "


def test_local_check_says_the_shared_reason_once() -> None:
    result = cli.invoke(app, ["check", "--local"], env={"COLUMNS": "250"})
    assert result.exit_code == expected_exit(result.stdout), result.stdout
    assert result.stdout.count(NO_GPU) == 1, result.stdout
    assert "probes (" in result.stdout and "uninit-read" in result.stdout


def _case(i: int, message: str) -> SweepCase:
    return SweepCase(
        key=f"e/none/c{i}", entry="e", probe="selftest", tool=Tool.NONE, process=i, batched=False,
        outcome=Outcome.PROBE_ERROR, message=message,
    )


def test_summary_with_many_reasons_counts_the_ones_not_listed() -> None:
    sweep = Sweep(
        id="s" * 32, definition="d", started_at=datetime.now(UTC),
        cases=[_case(i, f"reason {i}") for i in range(60)],
    )
    text = markdown(sweep)
    assert "reason 49 (1 case(s)" in text and "reason 50 " not in text
    assert "and 10 more case(s) with 10 other reason(s)" in text
