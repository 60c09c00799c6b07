"""Every exit path of `cuprobe gate`, on real runs: the exit code and what the Markdown summary says.

Sanitizer runs replay H200 captures through the whole runner (tests/replay); selftest runs are real CPU runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from pathlib import Path

from cuprobe.service.gate.baseline import load_baseline, write_baseline
from tests.unit.gate.conftest import (
    BASE_SUITE,
    PRODUCT,
    UNINIT_SIGNATURE,
    VIOLATE,
    VIOLATION_SIGNATURE,
    Gate,
    broken_control,
    summary,
)


def section(text: str, title: str) -> str:
    """The body of the summary section headed `### title` (title with its count)."""
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^### |\Z)", text, re.M | re.S)
    assert match, f"no section {title!r} in:\n{text}"
    return match.group(0)


def md(signature: str) -> str:
    """A signature as a Markdown table cell shows it (pipes escaped)."""
    return signature.replace("|", "\\|")


def test_clean(gate: Gate, replay: Callable[..., None], tmp_path: Path) -> None:
    result = gate(BASE_SUITE)
    assert result.exit_code == 0, result.output
    text = summary(tmp_path)
    assert text.startswith("## cuprobe gate: gate-test — exit 0 (pass)")
    assert "| clean | 1 |" in text and "| findings | 1 |" in text  # the control's run has findings: its own
    assert "None." in section(text, "New findings (0)")
    fired = section(text, "Positive controls fired (1)")
    assert "kernels/uninit_read.cu:6" in fired and "| 24 |" in fired


def test_new_finding(gate: Gate, replay: Callable[..., None], tmp_path: Path) -> None:
    result = gate(BASE_SUITE + VIOLATE + PRODUCT)
    assert result.exit_code == 1, result.output
    text = summary(tmp_path)
    assert "exit 1 (fail: new or expired findings)" in text
    new = section(text, "New findings (2)")
    assert md(VIOLATION_SIGNATURE) in new and md(UNINIT_SIGNATURE) in new
    # No GPU here: the confirmer's bare re-runs cannot run, so the finding is unconfirmed, and that fails.
    row = (
        "| new | unconfirmed | uninit-product | uninitialized-global-read | kernels/uninit_read.cu:6 | double_all"
        " | 1/1 | 24 |"
    )
    assert row in new
    assert "by confirmation: 0 consequential, 0 benign, 0 blind-spot, 1 unconfirmed, 1 not confirmed" in text


BATCHED = """
[[probe]]
name = "narrow-matmul-batched"
probe = "narrow-matmul"
tool = "initcheck"
params = { m = 32, k = 32, tile = 32, n = [1, 2, 3, 4, 8, 31, 32, 33, 63, 64, 65, 127, 128] }
"""


def test_one_defect_in_many_cases_of_a_batched_run_is_one_new_finding_with_every_case_counted(
    gate: Gate, replay: Callable[..., None], tmp_path: Path
) -> None:
    # One signature in several cases: the summary counts every case's records, not the first case's alone.
    result = gate(BASE_SUITE + BATCHED)
    assert result.exit_code == 1, result.output
    new = section(summary(tmp_path), "New findings (1)")
    assert (
        "| new | unconfirmed | narrow-matmul-batched | uninitialized-global-read | kernels/narrow_matmul.cu:23 |" in new
    )
    assert "| 1/1 | 6624 |" in new  # the sanitizer's ERROR SUMMARY: every case's records, not the last case's


def test_baselined_finding(gate: Gate, replay: Callable[..., None], tmp_path: Path) -> None:
    suite = BASE_SUITE + VIOLATE + PRODUCT
    written = gate(suite, "--update-baseline")
    assert written.exit_code == 0, written.output
    baseline = load_baseline(tmp_path / "suite.baseline.toml")
    assert {e.signature for e in baseline.finding} == {VIOLATION_SIGNATURE, UNINIT_SIGNATURE}
    assert baseline.sanitizers == {"initcheck": "2026.4.0.0"}
    again = gate(suite)
    assert again.exit_code == 0, again.output
    text = summary(tmp_path)
    assert "None." in section(text, "New findings (0)")
    known = section(text, "Baselined (2)")
    assert md(VIOLATION_SIGNATURE) in known and "recorded by cuprobe gate --update-baseline" in known
    # A rewrite keeps each entry's reason, not the file's comments, and says how many it dropped.
    path = tmp_path / "suite.baseline.toml"
    path.write_text(path.read_text().replace("[[finding]]", "# why: see the ticket\n[[finding]]", 1))
    rewritten = gate(suite, "--update-baseline")
    assert rewritten.exit_code == 0 and "its 1 comment line(s) were not kept" in " ".join(rewritten.output.split())
    assert "see the ticket" not in path.read_text() and "recorded by cuprobe gate" in path.read_text()
    quiet = gate(suite, "--update-baseline")
    assert quiet.exit_code == 0 and "comment line(s)" not in quiet.output


def test_expired_baseline_entry(gate: Gate, replay: Callable[..., None], tmp_path: Path) -> None:
    suite = BASE_SUITE + VIOLATE
    assert gate(suite, "--update-baseline").exit_code == 0
    path = tmp_path / "suite.baseline.toml"
    baseline = load_baseline(path)
    baseline.finding[0].expires = date(2020, 1, 1)  # the team's deadline for the fix has passed
    write_baseline(baseline, path)
    result = gate(suite)
    assert result.exit_code == 1, result.output
    failing = section(summary(tmp_path), "New findings (1)")
    assert "| expired |" in failing and md(VIOLATION_SIGNATURE) in failing


def test_fixed_finding(gate: Gate, replay: Callable[..., None], tmp_path: Path) -> None:
    assert gate(BASE_SUITE + VIOLATE, "--update-baseline").exit_code == 0
    result = gate(BASE_SUITE + VIOLATE.replace('"violate"', '"ok"'))  # the defect was fixed
    assert result.exit_code == 0, result.output
    fixed = section(summary(tmp_path), "Fixed (1)")
    assert md(VIOLATION_SIGNATURE) in fixed and "recorded by cuprobe gate" in fixed


def test_a_finding_is_not_fixed_while_a_run_of_its_probe_and_tool_could_not_run(
    gate: Gate, replay: Callable[..., None], tmp_path: Path
) -> None:
    """A baseline entry names the probe and tool that recorded it, not the suite entry. When the entry that recorded
    it timed out and another of the same probe and tool ran clean, its absence is not a fix (it was: 'Fixed (1)')."""
    assert gate(BASE_SUITE + VIOLATE, "--update-baseline").exit_code == 0
    hang = '[[probe]]\nname = "selftest-bare"\nprobe = "selftest"\ntool = "none"\ntimeout_s = 2\n'
    hang += 'params = { behaviour = "hang" }\n'
    other = '[[probe]]\nname = "selftest-other"\nprobe = "selftest"\ntool = "none"\nparams = { behaviour = "ok" }\n'
    result = gate(BASE_SUITE + "\n" + hang + "\n" + other)
    assert result.exit_code == 3, result.output
    text = summary(tmp_path)
    assert "Fixed (1)" not in text
    not_seen = section(text, "Baseline entries not seen")
    assert md(VIOLATION_SIGNATURE) in not_seen and "its probe and tool did not run cleanly" in not_seen


def test_could_not_run_wins_over_new_findings(gate: Gate, replay: Callable[..., None], tmp_path: Path) -> None:
    hang = '[[probe]]\nname = "hangs"\nprobe = "selftest"\ntool = "none"\ntimeout_s = 2\n'
    hang += 'params = { behaviour = "hang" }\n'
    result = gate(BASE_SUITE + VIOLATE + "\n" + hang)
    assert result.exit_code == 3, result.output
    text = summary(tmp_path)
    assert "exit 3 (could not run)" in text and "| timeout | 1 |" in text
    assert "| hangs | 1 | timeout | wall-clock limit of 2 s hit" in section(text, "Could not run (1)")
    assert md(VIOLATION_SIGNATURE) in section(text, "New findings (1)")  # still reported, but 3 wins


def test_no_gpu_is_could_not_run_never_clean(gate: Gate, tmp_path: Path) -> None:
    result = gate(BASE_SUITE.split('[[probe]]\nname = "selftest')[0])  # only the control; this machine: no GPU
    assert result.exit_code == 3, result.output
    assert "unavailable" in section(summary(tmp_path), "Could not run (1)")


def test_positive_control_that_came_back_clean(gate: Gate, replay: Callable[..., None], tmp_path: Path) -> None:
    replay(control=broken_control(tmp_path))
    result = gate(BASE_SUITE)
    assert result.exit_code == 3, result.output
    problems = section(summary(tmp_path), "Could not run (2)")
    assert "| initcheck-control | - | positive control came back clean | case n=1024,k=1000" in problems
    assert "sanitizer_error" in problems


def test_new_only_because_the_sanitizer_changed_is_labelled(
    gate: Gate, replay: Callable[..., None], tmp_path: Path
) -> None:
    replay(2025)
    assert gate(BASE_SUITE, "--update-baseline").exit_code == 0
    assert load_baseline(tmp_path / "suite.baseline.toml").sanitizers == {"initcheck": "2025.3.1.0"}
    replay(2026)
    result = gate(BASE_SUITE + PRODUCT, "--junit", str(tmp_path / "j.xml"), "--sarif", str(tmp_path / "s.sarif"))
    assert result.exit_code == 1, result.output
    label = "sanitizer version changed from 2025.3.1.0 to 2026.4.0.0"
    assert label in section(summary(tmp_path), "New findings (1)")
    assert label in (tmp_path / "j.xml").read_text()
    assert "from 2025.3.1.0 to 2026.4.0.0" in (tmp_path / "s.sarif").read_text()
    assert label in result.output
