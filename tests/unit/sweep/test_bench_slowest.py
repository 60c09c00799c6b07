"""bench/sweep.py's line on the slowest process: its stages, and its run stage split by kind of case."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.sweep import before_cases, not_run, reruns_order, reruns_split, slowest, torch_or_not
from cuprobe.contract import CONFIRM_CONTROL_PREFIX, Tool
from cuprobe.service.models import Outcome
from cuprobe.service.models.sweep import ProcessRecord, Sweep, SweepCase
from cuprobe.service.probing.runner import XML_NAME


def _case(process: int, probe_case: str, seconds: float | None) -> SweepCase:
    seen = {"seconds": seconds} if seconds is not None else {}
    return SweepCase(
        key=f"{process}-{probe_case}",
        entry="e",
        probe="narrow-matmul",
        tool=Tool.INITCHECK,
        probe_case=probe_case,
        process=process,
        batched=True,
        outcome=Outcome.CLEAN,
        observations={probe_case: seen},
    )


def _process(index: int, run_s: float) -> ProcessRecord:
    return ProcessRecord(
        index=index, probe="narrow-matmul", tool=Tool.INITCHECK, params={}, batched=True, cases=3,
        stages=[{"run": run_s, "parse": 0.5}],
    )


def test_the_slowest_process_is_split_by_kind_of_case_and_what_lies_outside_them() -> None:
    sweep = Sweep(
        id="s",
        definition="d",
        started_at=datetime.now(UTC),
        processes=[_process(0, 2.0), _process(1, 6.0)],
        cases=[
            _case(0, "unguarded-n1", 1.9),
            _case(1, "unguarded-n2", 1.3),
            _case(1, "unguarded-n3", 1.0),
            _case(1, "torch-n2", 2.0),
        ],
    )
    assert slowest(sweep) == (
        "  slowest process: 6.5 s (run 6.0, parse 0.5)\n"
        "  its run stage, in its cases (seconds, cases): torch 2.0 (1), unguarded 2.3 (2); outside them 1.7"
    )


def test_cases_without_timing_add_nothing() -> None:
    sweep = Sweep(
        id="s", definition="d", started_at=datetime.now(UTC), processes=[_process(0, 2.0)],
        cases=[_case(0, "unguarded-n1", None)],
    )
    assert slowest(sweep) == "  slowest process: 2.5 s (run 2.0, parse 0.5)"


def test_the_setup_before_the_first_case_is_read_beside_each_sanitizer_xml(tmp_path: Path) -> None:
    for name, seconds in (("a", 0.5), ("b", 1.25)):
        (tmp_path / name).mkdir()
        (tmp_path / name / XML_NAME).write_text("<x/>")
        cases = [{"id": f"{CONFIRM_CONTROL_PREFIX}benign", "observations": {"seconds": seconds / 5}},
                 {"id": f"{CONFIRM_CONTROL_PREFIX}blind-spot", "observations": {"seconds": seconds / 5}},
                 {"id": "unguarded-n1", "observations": {"seconds": 7.0}}]
        result = {"context": {"before_first_case_s": seconds}, "cases": cases}
        (tmp_path / name / "result.json").write_text(json.dumps(result))
        os.utime(tmp_path / name / "result.json", (1000.0, 1000.0))  # the harness wrote its result, then exited
        os.utime(tmp_path / name / XML_NAME, (1000.0 + seconds, 1000.0 + seconds))
    (tmp_path / "bare").mkdir()  # a bare re-run: no XML beside it, not counted
    (tmp_path / "bare" / "result.json").write_text(json.dumps({"context": {"before_first_case_s": 9.0}}))
    assert before_cases(tmp_path) == (
        "  before the first case, per process: 0.50-1.25 s (2 processes); in the confirmer's control cases: 0.20-0.50 s"
        "\n  from the result's write to the XML's last: 0.50-1.25 s, median 0.88 (the exit)"
    )
    assert before_cases(tmp_path / "bare") == "  before the first case: no timing left"


def test_torchs_import_on_its_second_thread_is_read_where_a_process_ran_it(tmp_path: Path) -> None:
    for name, context in (
        ("a", {"before_first_case_s": 0.5, "torch_prefetch": {"took_s": 2.25}}),
        ("b", {"before_first_case_s": 0.75, "torch_prefetch": {"took_s": 1.5}}),
        ("c", {"before_first_case_s": 1.0}),  # its parameters did not use torch
        ("d", {"before_first_case_s": 1.0, "torch_prefetch": {"took_s": None}}),  # not done as it wrote its result
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / XML_NAME).write_text("<x/>")
        (tmp_path / name / "result.json").write_text(json.dumps({"context": context, "cases": []}))
    assert before_cases(tmp_path).splitlines()[1] == "  torch's import on its second thread: 1.50-2.25 s (2 processes)"


def test_each_rerun_is_split_into_start_up_grid_cases_and_control_cases(tmp_path: Path) -> None:
    reruns = tmp_path / "sweep" / "shared-confirm000" / "confirm"
    for label, before, grid, schedule in (
        ("ff-1", 2.5, [0.01, 0.25, 0.04, 0.02], "spin"),
        ("sentinel", 3.0, [0.5, 0.5], None),  # a re-run that held no context says nothing of how it waited
    ):
        (reruns / label).mkdir(parents=True)
        cases = [{"id": f"unguarded-n{i}", "observations": {"seconds": s}} for i, s in enumerate(grid)]
        cases.append({"id": f"{CONFIRM_CONTROL_PREFIX}benign", "observations": {"seconds": 0.125}})
        cases.append({"id": "torch-n9", "observations": {}})  # no timing: counted nowhere
        result = {"context": {"before_first_case_s": before, "cuda_schedule": schedule}, "cases": cases}
        (reruns / label / "result.json").write_text(json.dumps(result))
    (reruns / "zero").mkdir()
    (reruns / "zero" / "result.json").write_text("{not json")  # a re-run killed mid-write: left out
    assert reruns_split(tmp_path) == (
        "  re-runs, s before the first case + in the grid's cases + in the control cases: "
        "ff-1 2.50 + 0.32 (4 cases, slowest 0.250: #1 unguarded-n1, median 0.0400 (first half 0.2500, second "
        "0.0400)) + 0.12, schedule spin; "
        "sentinel 3.00 + 1.00 (2 cases, slowest 0.500: #0 unguarded-n0, median 0.5000 (first half 0.5000, second "
        "0.5000)) + 0.12, schedule ?"
    )
    assert reruns_split(tmp_path / "sweep" / "elsewhere") == "  re-runs: no result left"
    # A process's late re-runs (flagged cases the early ones did not run) follow the early ones, named late.
    late = tmp_path / "sweep" / "p003" / "confirm-late" / "ff-1"
    late.mkdir(parents=True)
    cases = [{"id": "torch-n3", "observations": {"seconds": 2.0}}]
    (late / "result.json").write_text(json.dumps({"context": {"before_first_case_s": 1.5}, "cases": cases}))
    assert reruns_split(tmp_path).endswith(
        "; late ff-1 1.50 + 2.00 (1 cases, slowest 2.000: #0 torch-n3, median 2.0000 (first half 2.0000, second "
        "2.0000)) + 0.00, schedule ?"
    )


def test_the_ready_reruns_are_made_after_the_spares_unless_the_experiment_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CUPROBE_BENCH_RERUNS_ORDER", raising=False)
    assert reruns_order() == "after"
    monkeypatch.setenv("CUPROBE_BENCH_RERUNS_ORDER", "before")
    assert reruns_order() == "before"
    monkeypatch.setenv("CUPROBE_BENCH_RERUNS_ORDER", "first")
    with pytest.raises(SystemExit, match="CUPROBE_BENCH_RERUNS_ORDER='first': expected one of after, beside, before"):
        reruns_order()


def test_the_processes_whose_cases_did_not_run_are_named_with_why() -> None:
    broken = [
        _case(1, f"unguarded-n{n}", None).model_copy(
            update={"outcome": Outcome.SANITIZER_ERROR, "message": "the sanitizer exited 1 before its first case"}
        )
        for n in (1, 2)
    ]
    sweep = Sweep(
        id="s", definition="d", state="done", started_at=datetime(2026, 12, 6, tzinfo=UTC),
        cases=[_case(0, "unguarded-n1", 0.1), *broken],
    )
    assert not_run(sweep) == (
        "  NOT RUN: process 1, 2 of its 2 case(s): sanitizer_error: the sanitizer exited 1 before its first case\n"
    )
    assert not_run(sweep.model_copy(update={"cases": sweep.cases[:1]})) == ""  # every case ran: no line


def test_processes_with_torchs_cases_are_timed_against_the_others() -> None:
    """Whether the process the packed plan gave torch's cases (and fewer records) ends beside the others."""

    def process(index: int, variants: list[str], seconds: float) -> ProcessRecord:
        return ProcessRecord(
            index=index, probe="narrow-matmul", tool=Tool.INITCHECK, params={"n": [index + 1], "variants": variants},
            batched=True, cases=1, stages=[{"run": seconds - 0.5, "parse": 0.5}],
        )

    kernels = [process(i, ["unguarded", "guarded"], s) for i, s in enumerate([8.4, 9.0, 8.7])]
    processes = [process(3, ["torch"], 8.1), *kernels]
    sweep = Sweep(id="s", definition="d", started_at=datetime.now(UTC), processes=processes)
    assert torch_or_not(sweep) == "  with torch's cases: 1, 8.1 s; without them: 3, 8.4-9.0 s (median 8.7)\n"
    alike = sweep.model_copy(update={"processes": kernels})
    assert torch_or_not(alike) == ""  # nothing to set side by side
