"""The confirmer's decisions on recorded bare re-runs, and the flagged memory it checks, from H200 captures.

The flagged memory comes from real initcheck runs (tests/data). The bare re-runs are written by the probe-side
code a poisoned run uses (Recorder, PoisonLog: result.json plus the .npz beside it) around a numpy stand-in of
uninit-read's kernel (dst = 2 * src over a fresh buffer of which the host wrote the first k floats), run here on
the CPU for each poison; tests/gpu/test_confirm_processes_gpu.py runs the same decisions on the real kernels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cuprobe.contract import Allocation, Expectation, Tool
from cuprobe.probes.base import Recorder
from cuprobe.probes.narrow_matmul import padded
from cuprobe.probes.poison import PoisonPlan
from cuprobe.probes.uninit_read import UninitReadParams
from cuprobe.service.models import Confirmation, Finding
from cuprobe.service.probing.confirm.decide import (
    POISON_RUNS,
    BareRun,
    compare,
    decide,
    load_bare_run,
    sentinel_survival,
)
from cuprobe.service.probing.confirm.findings import not_rerun
from cuprobe.service.probing.launch import read_probe_result
from cuprobe.service.sanitizer.parse import ParseResult, parse_xml
from tests.conftest import BOX_ROOT, RUNS, VERSIONS, capture, xml_of

CASE = "n=1024,k=1000"
N, K = 1024, 1000


def _allocations(result_json: Path) -> list[tuple[str, Allocation]]:
    raw = json.loads(result_json.read_text())
    return [(c["id"], Allocation.model_validate(a)) for c in raw["cases"] for a in c["allocations"]]


def uninit_parse(version: str = VERSIONS[1], mapped: bool = True) -> ParseResult:
    run = RUNS / f"uninit-read-initcheck-{version}"
    return parse_xml(
        run / "run.xml",
        roots=[BOX_ROOT],
        allocations=_allocations(run / "result.json") if mapped else [],
        single_case=CASE,
    )


def bare_run(tmp: Path, label: str, mode: str, variant: str) -> BareRun:
    """One poisoned re-run of the stand-in, written and read back exactly as a real one is."""
    plan = PoisonPlan(mode=mode, watch={CASE: ["src"]})  # type: ignore[arg-type]
    recorder = Recorder("uninit-read", Tool.NONE, UninitReadParams(), plan)
    recorder.case(CASE, Expectation())
    fill = plan.fill if plan.fill is not None else 0
    src, dst = np.full(N * 4, fill, np.uint8), np.full(N * 4, fill, np.uint8)  # fresh, poisoned allocations
    s, d = src.view(np.float32), dst.view(np.float32)
    s[: N if variant == "hidden-write" else K] = 1.0  # hidden-write: a path the tool does not see wrote it all
    recorder.poison.checkpoint(CASE, "before double_all", src=lambda: src, dst=lambda: dst)
    with np.errstate(invalid="ignore"):
        d[:] = 2 * s
    if variant == "masked":
        d[K:] = -1.0  # read, then masked out of the result
    if variant == "noisy" and label == "ff#2":
        d[3] += 1.0
    recorder.poison.output(CASE, "dst", d.copy)
    recorder.result.complete = True
    out = tmp / label.replace("#", "-") / "result.json"
    out.parent.mkdir(parents=True)
    recorder.write(out)
    probe, why = read_probe_result(out)
    return load_bare_run(label, mode, probe, why, out)


def runs_of(tmp: Path, variant: str) -> dict[str, BareRun]:
    return {label: bare_run(tmp, label, mode, variant) for label, mode in POISON_RUNS}


def the_finding(parsed: ParseResult) -> tuple[Finding, Any]:
    (finding,) = parsed.findings
    return finding, parsed.flagged.get((finding.signature, finding.case))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_flagged_byte_of_the_capture_maps_to_its_case_and_buffer(version: str) -> None:
    finding, flagged = the_finding(uninit_parse(version))
    # 24 reads of 4 bytes past the 1,000 floats the host wrote: one range, src[4000:4096], none unmapped.
    assert finding.count == 24 and flagged.records == 24 and flagged.unmapped == 0
    assert flagged.merged() == {"src": [(K * 4, N * 4)]} and flagged.access_size == 4


@pytest.mark.parametrize("version", VERSIONS)
def test_narrow_matmul_batch_flags_exactly_the_padding_rows_of_each_case(version: str) -> None:
    case_dir = capture(version, "probe_narrow-matmul_initcheck")
    parsed = parse_xml(xml_of(case_dir), roots=[BOX_ROOT], allocations=_allocations(case_dir / "result.json"))
    by_case = {case: memory for (_, case), memory in parsed.flagged.items()}
    expected = {}
    for n in (1, 2, 3, 4, 8, 31, 33, 63, 65, 127):
        k = 32
        expected[f"unguarded-n{n}"] = {"w_padded": [(n * k * 4, padded(n, 32) * k * 4)]}
    assert {case: memory.merged() for case, memory in by_case.items()} == expected
    assert all(memory.unmapped == 0 for memory in by_case.values())


def test_consequential_when_the_never_written_value_reaches_the_result(tmp_path: Path) -> None:
    finding, flagged = the_finding(uninit_parse())
    verdict, evidence = decide(finding, flagged, runs_of(tmp_path, "copy"))
    assert verdict is Confirmation.CONSEQUENTIAL, evidence.reason
    assert evidence.surviving_elements == evidence.flagged_elements == 24
    assert (
        evidence.differing == 24
        and evidence.where is not None
        and evidence.where == "dst[1000]: nan (0xffffffff) under 0xFF, 0.0 (0x00000000) under zero"
    )
    assert evidence.digests["ff#1"] == evidence.digests["ff#2"] != evidence.digests["zero"]


def test_benign_when_it_is_read_but_masked_out(tmp_path: Path) -> None:
    finding, flagged = the_finding(uninit_parse())
    verdict, evidence = decide(finding, flagged, runs_of(tmp_path, "masked"))
    assert verdict is Confirmation.BENIGN, evidence.reason
    assert evidence.differing == 0 and evidence.surviving_elements == 24
    assert "bit-identical" in evidence.reason


def test_blind_spot_when_the_sentinel_is_gone_from_every_flagged_range(tmp_path: Path) -> None:
    finding, flagged = the_finding(uninit_parse())
    verdict, evidence = decide(finding, flagged, runs_of(tmp_path, "hidden-write"))
    assert verdict is Confirmation.BLIND_SPOT, evidence.reason
    assert evidence.surviving_elements == 0 and evidence.flagged_elements == 24
    assert evidence.checkpoint == "before double_all"


def test_same_poison_twice_differing_is_unconfirmed_not_deterministic(tmp_path: Path) -> None:
    finding, flagged = the_finding(uninit_parse())
    verdict, evidence = decide(finding, flagged, runs_of(tmp_path, "noisy"))
    assert verdict is Confirmation.UNCONFIRMED and "not deterministic" in evidence.reason


def test_a_bare_run_that_could_not_run_leaves_it_unconfirmed_with_the_reason(tmp_path: Path) -> None:
    finding, flagged = the_finding(uninit_parse())
    runs = runs_of(tmp_path, "copy")
    runs["zero"] = load_bare_run("zero", "zero", None, "exited 69: no CUDA device", tmp_path / "none.json")
    verdict, evidence = decide(finding, flagged, runs)
    assert verdict is Confirmation.UNCONFIRMED
    assert evidence.reason == "the bare re-run zero (poison 0x00) did not complete: exited 69: no CUDA device"


def test_reads_outside_every_recorded_buffer_cannot_be_checked(tmp_path: Path) -> None:
    finding, flagged = the_finding(uninit_parse(mapped=False))
    verdict, evidence = decide(finding, flagged, runs_of(tmp_path, "hidden-write"))
    assert verdict is Confirmation.UNCONFIRMED and "24 of 24 flagged reads fall outside" in evidence.reason


def test_a_missing_snapshot_is_unconfirmed(tmp_path: Path) -> None:
    finding, flagged = the_finding(uninit_parse())
    runs = runs_of(tmp_path, "copy")
    runs["sentinel"].snapshots.clear()
    verdict, evidence = decide(finding, flagged, runs)
    assert verdict is Confirmation.UNCONFIRMED and "no snapshot of src" in evidence.reason


def test_a_flagged_case_the_reruns_did_not_run_is_left_for_a_later_rerun(tmp_path: Path) -> None:
    """A re-run knows the cases it ran (its result's): a flagged case none of them ran (an early re-run asked for the
    cases that do not import torch) is named, so it is re-run after the sanitizer run rather than left unconfirmed
    for want of a snapshot. A failed re-run names none: its findings are unconfirmed with its reason."""
    runs = runs_of(tmp_path, "consequential")
    assert all(run.cases == {CASE} for run in runs.values())
    plan = {CASE: ["src"], "torch-n3": ["out"]}
    assert not_rerun(plan, runs) == {"torch-n3"}
    assert not_rerun({CASE: ["src"]}, runs) == set()
    runs["zero"] = BareRun("zero", "zero", False, "exited 1: no GPU")
    assert not_rerun(plan, runs) == set()


def test_sentinel_survival_counts_whole_elements_of_the_access_size() -> None:
    raw = np.full(16, 0xA5, np.uint8)
    raw[4] = 0x00  # element 1 (bytes 4..8) was partly written: gone
    raw[9] = 0xA5  # a written byte that happens to equal the sentinel does not make an element survive alone
    raw[8], raw[10], raw[11] = 1, 2, 3
    (survival,) = sentinel_survival("buf", raw, [(0, 16)], 4)
    assert (survival.elements, survival.surviving) == (4, 2)
    with pytest.raises(ValueError, match="past its 16-byte snapshot"):
        sentinel_survival("buf", raw, [(8, 20)], 4)


def test_compare_reports_the_largest_finite_difference_and_the_first_place() -> None:
    a = {"y": np.array([[1.0, 2.0], [3.0, np.nan]], np.float32)}
    b = {"y": np.array([[1.0, 2.5], [3.0, 0.0]], np.float32)}
    max_diff, differing, where = compare(a, b, ("0xFF", "zero"))
    assert (max_diff, differing) == (
        0.5,
        2,
    ) and where == "y[0,1]: 2.0 (0x40000000) under 0xFF, 2.5 (0x40200000) under zero"
    assert compare(a, {"y": a["y"].copy()}, ("a", "b")) == (None, 0, None)  # NaN payloads equal bit for bit
