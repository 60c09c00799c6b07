"""`cuprobe check` exits 0 when every probe behaved as expected (a positive control that fired included) and says so
in one line; --strict says why it exits 3; a probe with no run at its defaults says what it needs."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cuprobe.probes import registry
from cuprobe.service.cli.main import app
from tests.unit.gate.conftest import use_replay

cli = CliRunner()
WIDE = {"COLUMNS": "250"}


def test_a_positive_control_that_fired_is_as_expected_and_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    # The initcheck control as the H200 ran it (24 records at kernels/uninit_read.cu:6), through the replay stand-in.
    use_replay(monkeypatch)
    monkeypatch.setattr(registry, "available", lambda: ["command", "selftest", "uninit-read"])
    result = cli.invoke(app, ["check", "--local"], env=WIDE)
    assert "findings" in result.stdout  # the control's outcome, shown as it is
    assert result.exit_code == 0, result.stdout
    assert "every probe that ran behaved as expected: 1 clean, 1 found the defects planted in them" in result.stdout
    assert "it needs parameters, none at its defaults (`cuprobe probes command` lists them)" in result.stdout
    assert "disabled" not in result.stdout


def test_strict_says_which_probes_could_not_run_and_that_this_is_why_it_exits_3(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(registry, "available", lambda: ["selftest", "uninit-read"])  # no GPU here: unavailable
    relaxed = cli.invoke(app, ["check", "--local"], env=WIDE)
    assert relaxed.exit_code == 0, relaxed.stdout
    assert "1 could not run here, not counted (--strict counts them)" in relaxed.stdout
    strict = cli.invoke(app, ["check", "--local", "--strict"], env=WIDE)
    assert strict.exit_code == 3
    assert "exit 3 (--strict): uninit-read could not run here" in strict.stdout


def test_a_probe_that_does_not_behave_as_expected_exits_1_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from cuprobe.service.cli import check

    rows = [
        check.CheckRow("selftest", "none", "findings", "expectation violated", as_expected=False),
        check.CheckRow("gradcheck", "none", "clean", "ok", as_expected=True),
    ]
    assert check.check_verdict(rows, strict=False) == (
        1, "exit 1: selftest did not behave as expected (see the table)"
    )
    rows.append(check.CheckRow("planted", "memcheck", "sanitizer_error", "the control came back clean"))
    assert check.check_verdict(rows, strict=False) == (3, "exit 3: planted could not run (see the table)")
