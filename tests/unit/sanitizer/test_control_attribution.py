"""The confirmer's planted cases on real H200 runs: their records map only to them, and survive the record cap."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from cuprobe.contract import ProbeResult, Tool, is_confirm_control
from cuprobe.service.probing.runner import allocations_of
from cuprobe.service.sanitizer.parse import parse_xml
from tests.conftest import RUNS

CONTROLS = {
    "cuprobe-confirm-control/blind-spot": "cuprobe_control_copy",
    "cuprobe-confirm-control/benign": "cuprobe_control_masked",
    "cuprobe-confirm-control/consequential": "cuprobe_control_copy",
}


def _parse(name: str, tmp_path: Path, workers: int) -> tuple[ProbeResult, list[tuple[str | None, str, int]], int]:
    run = RUNS / f"confirm-{name}-2026.4.0.0"
    xml = tmp_path / "run.xml"
    xml.write_bytes(gzip.decompress((run / "run.xml.gz").read_bytes()))
    probe = ProbeResult.model_validate_json((run / "result.json").read_text())
    own = [c.id for c in probe.cases if not is_confirm_control(c.id)]
    parsed = parse_xml(
        xml,
        tool=Tool.INITCHECK,
        roots=["/work/main"],
        allocations=allocations_of(probe),
        single_case=own[0] if len(own) == 1 else None,
        max_records=10_000,
        workers=workers,
    )
    return probe, [(f.case, f.kernel, f.count) for f in parsed.findings], parsed.records


@pytest.mark.parametrize("workers", [1, 2])
def test_the_probes_own_reads_stay_with_its_case_when_planted_cases_reuse_its_addresses(
    tmp_path: Path, workers: int
) -> None:
    _, findings, records = _parse("uninit_read", tmp_path, workers)
    assert records == 408
    assert ("n=1024,k=1000", "double_all", 24) in findings  # 1024 - 1000 never-written elements
    assert {(case, kernel) for case, kernel, _ in findings if is_confirm_control(case)} == set(CONTROLS.items())


@pytest.mark.parametrize("workers", [1, 2])
def test_planted_cases_are_kept_past_the_record_cap(tmp_path: Path, workers: int) -> None:
    _, findings, records = _parse("bf16_matmul", tmp_path, workers)
    assert records == 98_688
    assert {(case, kernel) for case, kernel, _ in findings if is_confirm_control(case)} == set(CONTROLS.items())
    assert [(c, n) for c, k, n in findings if k == "unrolled_elementwise_kernel"] == [("torch-cuda", 10_000)]


def test_no_record_of_a_probe_kernel_lands_in_a_planted_case(tmp_path: Path) -> None:
    _, findings, _ = _parse("narrow_unguarded", tmp_path, 1)
    planted = [(case, kernel) for case, kernel, _ in findings if is_confirm_control(case)]
    assert sorted(planted) == sorted(CONTROLS.items())
    assert len([f for f in findings if f[1] == "tiled_matmul"]) == 10  # one per unguarded case reading padding


def test_torchs_copy_kernel_is_library_with_device_only_backtraces(tmp_path: Path) -> None:
    run = RUNS / "confirm-bf16_matmul-2026.4.0.0"
    xml = tmp_path / "run.xml"
    xml.write_bytes(gzip.decompress((run / "run.xml.gz").read_bytes()))
    parsed = parse_xml(xml, tool=Tool.INITCHECK, roots=["/work/main"], max_records=100)
    (torch_copy,) = [f for f in parsed.findings if f.kernel == "unrolled_elementwise_kernel"]
    assert torch_copy.library and torch_copy.file is None
    assert not any(f.library for f in parsed.findings if f.kernel.startswith("cuprobe_control_"))
