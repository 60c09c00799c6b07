"""Suites and baselines the gate refuses (exit 2, naming the problem), flaky findings, and what is never written."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuprobe.service.gate.baseline import Baseline, BaselineEntry
from cuprobe.service.gate.markdown import render
from cuprobe.service.gate.runs import EntryRuns
from cuprobe.service.gate.suite import SuiteError, load_suite
from cuprobe.service.gate.verdict import judge
from cuprobe.service.models import ProbeRequest
from cuprobe.service.probing.runner import run_probe
from tests.unit.gate.conftest import BASE_SUITE, VIOLATE, VIOLATION_SIGNATURE, Gate, summary

REPO = Path(__file__).resolve().parents[3]


def test_a_tool_without_a_positive_control_is_refused(gate: Gate) -> None:
    no_control = BASE_SUITE.replace("control = true", "control = false")
    result = gate(no_control)
    assert result.exit_code == 2
    assert "no positive control for initcheck" in result.output and "uninit-read" in result.output


def test_a_control_that_plants_nothing_is_refused(tmp_path: Path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text(BASE_SUITE.replace("control = true", "control = true\nparams = { n = 64, k = 64 }"))
    with pytest.raises(SuiteError, match="initcheck-control is marked control = true, but probe uninit-read"):
        load_suite(suite)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name = [", "not valid TOML"),
        ('name = "x"\n[[probe]]\nname = "a"\nprobe = "nope"\ntool = "none"\n', "unknown probe 'nope'"),
        ('name = "x"\n[[probe]]\nname = "a"\nprobe = "selftest"\ntool = "none"\nrepeats = 0\n', '[[probe]] "a" repeat'),
        ('name = "x"\n[[probe]]\nname = "a"\nprobe = "selftest"\ntool = "none"\nparams = { bogus = 1 }\n', "bogus"),
        ('name = "x"\n[[probe]]\nname = "t"\nprobe = "matmul-throughput"\ntool = "initcheck"\n', "not run under"),
        ('name = "x"\n' + VIOLATE + VIOLATE, "repeated: selftest-bare"),
    ],
)
def test_bad_suites_are_refused_with_the_reason(gate: Gate, text: str, message: str) -> None:
    result = gate(text)
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output


def test_bad_baseline_is_refused_and_left_alone(gate: Gate, tmp_path: Path) -> None:
    path = tmp_path / "suite.baseline.toml"
    path.write_text(f'[[finding]]\nsignature = "{VIOLATION_SIGNATURE}"\n')  # no reason
    result = gate('name = "x"\n' + VIOLATE)
    assert result.exit_code == 2 and "finding.0.reason" in result.output
    missing = gate('name = "x"\n' + VIOLATE, "--baseline", str(tmp_path / "nope.toml"))
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert path.read_text() == f'[[finding]]\nsignature = "{VIOLATION_SIGNATURE}"\n'


def test_update_baseline_is_refused_when_something_could_not_run(gate: Gate, tmp_path: Path) -> None:
    # This machine has no GPU: the initcheck control is unavailable, so nothing may be recorded as known.
    result = gate(BASE_SUITE + VIOLATE, "--update-baseline")
    assert result.exit_code == 3 and "baseline not written" in result.output
    assert not (tmp_path / "suite.baseline.toml").exists()
    assert "unavailable" in summary(tmp_path)


def test_flaky_finding(tmp_path: Path) -> None:
    # Two real CPU runs of selftest (one violates its expectation, one does not) given to the gate as the two
    # repeats of one suite entry: a finding seen in 1 of 2 repeats (a scenario built from real runs).
    suite_file = tmp_path / "s.toml"
    suite_file.write_text('name = "flaky"\n' + VIOLATE.replace("name =", "repeats = 2\nname ="))
    suite = load_suite(suite_file)
    seen = run_probe(ProbeRequest(probe="selftest", params={"behaviour": "violate"}), workdir=tmp_path / "1")
    unseen = run_probe(ProbeRequest(probe="selftest", params={"behaviour": "ok"}), workdir=tmp_path / "2")
    runs = [EntryRuns(suite.entries[0], [seen, unseen])]
    report = judge(suite, runs, None)
    assert report.exit_code == 1  # seen in k of n repeats still counts
    assert "| new | - | selftest-bare | expectation-violation | - | - | 1/2 |" in render(report)
    flaky = Baseline(
        finding=[
            BaselineEntry(
                signature=VIOLATION_SIGNATURE, reason="races the clock", flaky=True, probe="selftest", tool="none"
            )
        ]
    )
    report = judge(suite, runs, flaky)
    assert report.exit_code == 0
    assert "| baselined (flaky) | - | 1/2 | races the clock |" in render(report)
    gone = judge(suite, [EntryRuns(suite.entries[0], [unseen, unseen])], flaky)
    assert gone.exit_code == 0 and gone.fixed == []  # a flaky entry not seen is not "fixed"
    assert "marked flaky: absence proves nothing" in render(gone)


def test_shipped_premerge_suite_is_accepted() -> None:
    suite = load_suite(REPO / "suites" / "premerge.toml")
    tools = {entry.tool for entry in suite.entries if entry.control}
    assert {"initcheck", "memcheck", "racecheck", "synccheck"} <= {t.value for t in tools}
    assert not any(entry.control for entry in suite.entries if entry.probe == "narrow-matmul")


def test_a_suites_tool_options_reach_only_that_tools_entries(tmp_path: Path) -> None:
    """`leak_check` at the top of a suite sets its memcheck entries; the initcheck control beside them runs without
    it (before, the merge put it on every entry and the initcheck entry was refused for an option it never set)."""
    memcheck = '\n[[probe]]\nname = "memcheck-control"\nprobe = "planted"\ntool = "memcheck"\n'
    memcheck += 'params = { defect = "oob" }\ncontrol = true\n'
    suite_file = tmp_path / "s.toml"
    suite_file.write_text('options = { leak_check = "full", launch_count = 5 }\n' + BASE_SUITE + memcheck)
    entries = {e.name: e.options.key() for e in load_suite(suite_file).entries}
    assert entries == {
        "initcheck-control": "launch-count=5",
        "selftest-initcheck": "launch-count=5",
        "memcheck-control": "leak-check=full,launch-count=5",
    }
    suite_file.write_text("options = { padding = 8 }\n" + BASE_SUITE)
    with pytest.raises(SuiteError, match="options: --padding is a memcheck option, and no entry runs that tool"):
        load_suite(suite_file)
